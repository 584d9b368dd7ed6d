import { connect } from "node:net";
import { redactUrl } from "@fundraise/bus";

/** A server `pnpm start` needs and does not start itself. */
interface Needed {
  name: string;
  url: string;
}

const DEFAULT_PORTS: Record<string, number> = {
  "postgres:": 5432,
  "postgresql:": 5432,
  "amqp:": 5672,
  "redis:": 6379,
};

/** Whether something accepts a TCP connection at the URL's host and port within `timeoutMs`. */
function reachable(url: string, timeoutMs: number): Promise<boolean> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return Promise.resolve(false);
  }
  const port = Number(parsed.port || DEFAULT_PORTS[parsed.protocol] || 0);
  const host = parsed.hostname.replace(/^\[|\]$/g, "") || "127.0.0.1";
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once("connect", () => done(true));
    socket.once("timeout", () => done(false));
    socket.once("error", () => done(false));
  });
}

/**
 * The servers of `env` that do not answer (PostgreSQL, Redis, RabbitMQ), each as the one line to print:
 * its URL (no password) and how to get it. All are asked at once, each for at most `timeoutMs`.
 */
export async function missingServers(
  env: { DATABASE_URL?: string; REDIS_URL?: string; AMQP_URL?: string },
  timeoutMs = 2_000,
): Promise<string[]> {
  const needed: Needed[] = [
    { name: "PostgreSQL", url: env.DATABASE_URL ?? "" },
    { name: "Redis", url: env.REDIS_URL ?? "" },
    { name: "RabbitMQ", url: env.AMQP_URL ?? "" },
  ];
  const answers = await Promise.all(needed.map(({ url }) => reachable(url, timeoutMs)));
  return needed
    .filter((_, i) => !answers[i])
    .map(
      ({ name, url }) =>
        `${name} does not answer at ${redactUrl(url)}: start it (\`bash scripts/infra-up.sh\` where this machine has the servers, \`docker compose up -d postgres redis rabbitmq\` where Docker is), or point the URL at one.`,
    );
}
