/**
 * The system as separate processes for end-to-end tests: users, auth, storage, projects and the gateway
 * on a run-own database, vhost and Redis prefix, a real anvil with the platform deployed, a real SMTP
 * server that keeps every mail it receives, and IPFS: the Kubo-RPC STAND-IN of `packages/ipfs-node` (not
 * Kubo: the few RPC calls the storage service makes, with Kubo's CIDs), in this process, on a temporary
 * folder and a free loopback port.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestVhost } from "@fundraise/bus/testing";
import { type Deployment, writeDeployment } from "@fundraise/contracts";
import { type AnvilInstance, deployFresh, startAnvil } from "@fundraise/contracts/testing";
import { type IpfsNode, startIpfsNode } from "@fundraise/ipfs-node";
import { createTestDatabase } from "@fundraise/service-kit/testing";
import { type ParsedMail, simpleParser } from "mailparser";
import { SMTPServer } from "smtp-server";
import { freePort, type ServiceCode, serviceNodeArgs, stopProcess } from "../scripts/lib/processes.ts";
import { assertBundlesCurrent, testServiceCode } from "../scripts/lib/service-code.ts";

const root = join(import.meta.dirname, "..");

export interface Mailbox {
  /** Resolves with the first mail to `to` that arrives (or has arrived), and takes it out of the box. */
  next(to: string, timeoutMs?: number): Promise<ParsedMail>;
}

const recipients = (mail: ParsedMail) =>
  [mail.to]
    .flat()
    .flatMap((a) => a?.value ?? [])
    .map((a) => a.address?.toLowerCase());

/**
 * A real SMTP server that keeps every mail it receives. `raw(to)` hands out a mail's source, for a test
 * process that reads this box from afar (see `remoteMailbox`).
 */
async function startSmtp(): Promise<{
  url: string;
  mailbox: Mailbox & { raw(to: string, timeoutMs?: number): Promise<Buffer> };
  stop(): Promise<void>;
}> {
  const mails: { raw: Buffer; parsed: ParsedMail }[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("error", (error) => callback(error));
      stream.on("end", () => {
        const raw = Buffer.concat(chunks);
        simpleParser(raw).then(
          (parsed) => {
            mails.push({ raw, parsed });
            callback();
          },
          (error: Error) => callback(error),
        );
      });
    },
  });
  // Port 0, held from the start: a port found free and then taken would race other connections.
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.server.address() as { port: number };
  async function take(to: string, timeoutMs = 20_000) {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const found = mails.find((m) => recipients(m.parsed).includes(to.toLowerCase()));
      if (found) {
        mails.splice(mails.indexOf(found), 1);
        return found;
      }
      if (Date.now() > until) throw new Error(`no mail to ${to} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url: `smtp://127.0.0.1:${port}`,
    mailbox: {
      next: async (to, timeoutMs) => (await take(to, timeoutMs)).parsed,
      raw: async (to, timeoutMs) => (await take(to, timeoutMs)).raw,
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The mailbox of a system another process started, read over HTTP (`e2e/global-setup.ts` serves it). */
export function remoteMailbox(url: string): Mailbox {
  return {
    async next(to, timeoutMs = 20_000) {
      const res = await fetch(`${url}?${new URLSearchParams({ to, timeoutMs: String(timeoutMs) })}`);
      if (res.status !== 200) throw new Error(await res.text());
      return simpleParser(Buffer.from(await res.arrayBuffer()));
    },
  };
}

/** Everything a test needs to reach a running system; plain data, so it crosses process boundaries. */
export interface SystemCoordinates {
  gatewayUrl: string;
  /**
   * Every gateway replica of the system, the first being `gatewayUrl`: one process each, on the same
   * database, vhost and Redis prefix (a request may reach any of them, as behind a load balancer).
   */
  gatewayUrls: string[];
  anvil: { url: string; chainId: number; accounts: string[] };
  deployment: Deployment;
  amqpUrl: string;
  redisPrefix: string;
  /** The system's own database (a test reads what a service recorded, to explain a failure). */
  databaseUrl: string;
  /** The IPFS stand-in's RPC API (`IPFS_API_URL`), when the system runs the storage service. */
  ipfsUrl?: string;
}

/** A running system as a test sees it, whether its own or shared (`e2e/shared.ts`). */
export interface RunningSystem extends SystemCoordinates {
  mailbox: Mailbox;
}

/** A system this process started: its own anvil, its SMTP server in this process, its processes' output. */
export interface System extends RunningSystem {
  anvil: AnvilInstance;
  mailbox: Mailbox & { raw(to: string, timeoutMs?: number): Promise<Buffer> };
  /** The process id of each service (benchmarks read their CPU time). */
  pids: Record<string, number>;
  /**
   * Starts one more instance of a service (another replica, or one in place of a killed one), with
   * `env` added to the system's; resolves with its process id once it says it serves.
   */
  startService(name: string, env?: Record<string, string>, code?: ServiceCode): Promise<number>;
  /** Stops the IPFS stand-in under the running services, or starts it again (same port and data). */
  ipfsNode: { stop(): Promise<void>; start(): Promise<void> } | undefined;
  /** The environment every service of the system starts with (to start one by other means). */
  serviceEnv: Record<string, string | undefined>;
  output(): string;
  stop(): Promise<void>;
}

/** Every service of the system; a run may start fewer (`startSystem({ services })`). */
export const ALL_SERVICES = ["users", "auth", "storage", "projects", "chain-indexer", "gateway"];

/** `count` loopback ports nobody listens on right now, all different. */
async function distinctFreePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const port = await freePort();
    if (!ports.includes(port)) ports.push(port);
  }
  return ports;
}

/** The IPFS stand-in on a folder of its own, or nothing when the run has no storage service. */
async function startIpfs(wanted: boolean, stateDir: string): Promise<IpfsNode | undefined> {
  if (!wanted) return undefined;
  return startIpfsNode({ dataDir: join(stateDir, "ipfs"), host: "127.0.0.1", port: 0 });
}

export async function startSystem(
  options: {
    services?: string[];
    env?: Record<string, string>;
    /** Variables of one service only (a health port of its own, say), by service name. */
    serviceEnv?: Record<string, Record<string, string>>;
    /** An IPFS RPC API already running (a benchmark's node in a process of its own): none is started. */
    ipfsUrl?: string;
    /**
     * Gateway replicas beyond the first (default 0): each one more gateway process, with the system's
     * environment on a port of its own, listed in `gatewayUrls`. Only when the run has a gateway.
     */
    extraGateways?: number;
    /**
     * Each service from its TypeScript sources through tsx or from `pnpm build`'s output; by default as
     * E2E_SERVICE_CODE says (scripts/lib/service-code.ts), sources when unset.
     */
    code?: ServiceCode;
    /** A broker of the run's own (its whole node, say): no vhost is made on the shared one. */
    amqpUrl?: string;
    /** The chain URL the services get, from anvil's (a proxy in front of it that a run can cut). */
    chainUrl?: (anvilUrl: string) => Promise<string>;
  } = {},
): Promise<System> {
  const services = options.services ?? ALL_SERVICES;
  const code = options.code ?? testServiceCode();
  if (code === "built") assertBundlesCurrent(services);
  const stateDir = mkdtempSync(join(tmpdir(), "fundraise-e2e-"));
  const extraGateways = services.includes("gateway") ? (options.extraGateways ?? 0) : 0;
  const [db, vhost, anvil, smtp, gatewayPorts, firstIpfs] = await Promise.all([
    createTestDatabase("e2e"),
    options.amqpUrl === undefined
      ? createTestVhost("e2e")
      : { url: options.amqpUrl, dispose: () => Promise.resolve() },
    startAnvil(),
    startSmtp(),
    distinctFreePorts(1 + extraGateways),
    startIpfs(
      (services.includes("storage") || services.includes("gateway")) && options.ipfsUrl === undefined,
      stateDir,
    ),
  ]);
  let ipfs = firstIpfs;
  const [port, ...extraPorts] = gatewayPorts as [number, ...number[]];
  const { deployment } = await deployFresh(anvil.url);
  const deploymentFile = join(stateDir, "deployment.json");
  writeDeployment(deploymentFile, deployment);
  writeFileSync(join(stateDir, ".keep"), "");
  const redisPrefix = `test:${randomBytes(4).toString("hex")}:`;
  const gatewayUrl = `http://localhost:${port}`;
  const gatewayUrls = [gatewayUrl, ...extraPorts.map((p) => `http://localhost:${p}`)];
  const env = {
    ...process.env,
    DATABASE_URL: db.url,
    AMQP_URL: vhost.url,
    REDIS_PREFIX: redisPrefix,
    CHAIN_RPC_URL: options.chainUrl ? await options.chainUrl(anvil.url) : anvil.url,
    CHAIN_DEPLOYMENT_FILE: deploymentFile,
    SMTP_URL: smtp.url,
    PORT: String(port),
    // Several systems run at once: no internal metrics port for them to fight over.
    METRICS_PORT: "0",
    PUBLIC_BASE_URL: gatewayUrl,
    MAIL_DIR: join(stateDir, "mail"),
    // E2E_LOG_LEVEL=info (or debug) with E2E_LOG_DIR keeps what the services said, to read after a run.
    LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? "warn",
    ...(ipfs ? { IPFS_API_URL: ipfs.url } : {}),
    ...(options.ipfsUrl ? { IPFS_API_URL: options.ipfsUrl } : {}),
    ...options.env,
  };
  let output = "";
  // Services that said they serve (runService's "ready" over the IPC channel).
  const serving = new Set<string>();
  const spawnService = (name: string, extraEnv: Record<string, string> = {}, serviceCode = code) => {
    // SERVICE_NODE_FLAGS adds Node flags to every service, e.g. `--cpu-prof --cpu-prof-dir=.local/prof`
    // to profile a benchmark (NODE_OPTIONS refuses --cpu-prof).
    const flags = (process.env.SERVICE_NODE_FLAGS ?? "").split(" ").filter(Boolean);
    const child = spawn(process.execPath, serviceNodeArgs(name, flags, serviceCode), {
      cwd: root,
      env: { ...env, ...options.serviceEnv?.[name], ...extraEnv },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    child.on("message", (message: { type?: unknown }) => {
      if (message?.type === "ready") serving.add(name);
    });
    child.stdout?.on("data", (c) => (output += c));
    const logDir = process.env.E2E_LOG_DIR;
    if (logDir) child.stdout?.on("data", (c) => appendFileSync(join(logDir, `${name}.log`), c));
    child.stderr?.on("data", (c) => (output += c));
    return child;
  };
  const children: ChildProcess[] = services.map((name) => spawnService(name));
  // The other gateway replicas: the same environment (PUBLIC_BASE_URL stays the first's), their own port.
  const replicas = extraPorts.map((p) => spawnService("gateway", { PORT: String(p) }));
  children.push(...replicas);
  const replicasServing = new Set<ChildProcess>();
  for (const replica of replicas) {
    replica.on("message", (message: { type?: unknown }) => {
      if (message?.type === "ready") replicasServing.add(replica);
    });
  }
  const stop = async () => {
    await Promise.all(children.map((child) => stopProcess(child)));
    await Promise.all([smtp.stop(), anvil.stop(), ipfs?.stop()]);
    await Promise.all([db.dispose(), vhost.dispose()]);
    rmSync(stateDir, { recursive: true, force: true });
  };
  const until = Date.now() + 120_000;
  for (;;) {
    const ready = await fetch(`${gatewayUrl}/readyz`)
      .then((r) => r.ok)
      .catch(() => false);
    // Ready also means every service said it serves, the auth service answers (JWKS) and users answers
    // (count).
    const auth =
      ready &&
      (await fetch(`${gatewayUrl}/.well-known/jwks.json`).then(
        (r) => r.ok,
        () => false,
      ));
    const users =
      ready &&
      (await fetch(`${gatewayUrl}/user/learnusercount`).then(
        (r) => r.ok,
        () => false,
      ));
    // And projects answers an anonymous list (storage checked its node's CIDs before it serves).
    const projects =
      ready &&
      services.includes("projects") &&
      (await fetch(`${gatewayUrl}/Project/Get/All`).then(
        (r) => r.status === 200,
        () => false,
      ));
    // And the chain-indexer answers from its index (it serves once its tables exist; backfill runs after).
    const indexer =
      ready &&
      services.includes("chain-indexer") &&
      (await fetch(`${gatewayUrl}/EventDebug/Debug`).then(
        (r) => r.status === 200,
        () => false,
      ));
    // And every other gateway replica said it serves and is ready.
    const replicasReady =
      ready &&
      replicasServing.size === replicas.length &&
      (
        await Promise.all(
          gatewayUrls.slice(1).map((url) =>
            fetch(`${url}/readyz`).then(
              (r) => r.ok,
              () => false,
            ),
          ),
        )
      ).every(Boolean);
    if (
      ready &&
      replicasReady &&
      serving.size === services.length &&
      (indexer || !services.includes("chain-indexer")) &&
      (auth || !services.includes("auth")) &&
      (users || !services.includes("users")) &&
      (projects || !services.includes("projects"))
    )
      break;
    if (Date.now() > until || children.some((c) => c.exitCode !== null)) {
      await stop();
      throw new Error(`the system did not come up:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    gatewayUrl,
    gatewayUrls,
    anvil,
    deployment,
    mailbox: smtp.mailbox,
    amqpUrl: vhost.url,
    redisPrefix,
    databaseUrl: db.url,
    ...(ipfs ? { ipfsUrl: ipfs.url } : {}),
    ...(options.ipfsUrl ? { ipfsUrl: options.ipfsUrl } : {}),
    pids: Object.fromEntries(services.map((name, i) => [name, children[i]?.pid ?? 0])),
    startService(name, extraEnv, code) {
      const child = spawnService(name, extraEnv, code);
      children.push(child);
      return new Promise((resolve, reject) => {
        child.on("message", (message: { type?: unknown }) => {
          if (message?.type === "ready") resolve(child.pid ?? 0);
        });
        child.once("exit", (code) =>
          reject(new Error(`${name} exited (${code}) before it served:\n${output}`)),
        );
      });
    },
    ipfsNode: ipfs && {
      stop: async () => ipfs?.stop(),
      async start() {
        const { port: ipfsPort } = ipfs as IpfsNode;
        ipfs = await startIpfsNode({ dataDir: join(stateDir, "ipfs"), host: "127.0.0.1", port: ipfsPort });
      },
    },
    serviceEnv: env,
    output: () => output,
    stop,
  };
}
