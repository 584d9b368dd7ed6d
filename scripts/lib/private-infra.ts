/**
 * Servers of a run's own, which the run may stop and start without disturbing anyone else on the
 * machine: a RabbitMQ node (its own node name, ports, data and log folders, no plugins), a Redis server
 * that keeps nothing on disk, and a TCP proxy in front of an address (the chain's) that the run can cut.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { freePort, stopProcess } from "./processes.ts";

/** Resolves once something accepts TCP connections on the loopback port, or rejects after `timeoutMs`. */
export async function waitForPort(port: number, timeoutMs: number, what: string): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    if (Date.now() > until) throw new Error(`${what} did not listen on ${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface OwnServer {
  url: string;
  /** Milliseconds the last start took, until the port accepted connections. */
  startMs: number;
  /** Stops it (SIGTERM; SIGKILL after a grace) and starts it again on the same port and data. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A RabbitMQ node of the run's own, on free ports, its Mnesia and logs under `dir`, no plugins, and
 * guest/guest (allowed from loopback). Erlang: the node registers with the machine's epmd under its own
 * name; the cookie is copied from the packaged node's (or made by the node) in a HOME under `dir`.
 */
export async function startOwnRabbit(dir: string): Promise<OwnServer> {
  mkdirSync(dir, { recursive: true });
  const [port, distPort] = [await freePort(), await freePort()];
  const plugins = join(dir, "enabled_plugins");
  writeFileSync(plugins, "[].");
  const cookie = "/var/lib/rabbitmq/.erlang.cookie";
  if (existsSync(cookie) && !existsSync(join(dir, ".erlang.cookie"))) {
    try {
      copyFileSync(cookie, join(dir, ".erlang.cookie"));
    } catch {
      // not readable: the node makes a cookie of its own in HOME
    }
  }
  const server = existsSync("/usr/lib/rabbitmq/bin/rabbitmq-server")
    ? "/usr/lib/rabbitmq/bin/rabbitmq-server"
    : "rabbitmq-server";
  const env = {
    ...process.env,
    HOME: dir,
    RABBITMQ_NODENAME: `chaos-${process.pid}-${port}@localhost`,
    RABBITMQ_NODE_IP_ADDRESS: "127.0.0.1",
    RABBITMQ_NODE_PORT: String(port),
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_MNESIA_BASE: join(dir, "mnesia"),
    RABBITMQ_LOG_BASE: join(dir, "log"),
    RABBITMQ_ENABLED_PLUGINS_FILE: plugins,
    RABBITMQ_PID_FILE: join(dir, "pid"),
    RABBITMQ_CONFIG_FILE: join(dir, "rabbitmq"),
    RABBITMQ_ADVANCED_CONFIG_FILE: join(dir, "advanced.config"),
    RABBITMQ_CONF_ENV_FILE: join(dir, "rabbitmq-env.conf"),
  };
  let child: ChildProcess | undefined;
  return ownServer(
    `amqp://guest:guest@127.0.0.1:${port}`,
    async () => {
      child = spawn(server, [], { env, stdio: "ignore", detached: false });
      await waitForPort(port, 60_000, "RabbitMQ");
    },
    async () => {
      const pidFile = join(dir, "pid");
      const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, "utf8").trim()) : 0;
      if (pid > 0 && alive(pid)) {
        process.kill(pid, "SIGTERM");
        const until = Date.now() + 15_000;
        while (alive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
        if (alive(pid)) process.kill(pid, "SIGKILL");
      }
      if (child) await stopProcess(child, 5_000);
      rmSync(pidFile, { force: true });
    },
  );
}

/** Whether a process with this id runs (signal 0). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A Redis server of the run's own on a free port, keeping nothing on disk. */
export async function startOwnRedis(): Promise<OwnServer> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  return ownServer(
    `redis://127.0.0.1:${port}`,
    async () => {
      child = spawn(
        "redis-server",
        ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        { stdio: "ignore" },
      );
      await waitForPort(port, 20_000, "Redis");
    },
    async () => {
      if (child) await stopProcess(child, 5_000);
    },
  );
}

/** A server started now, stopped and restarted through `start` and `stop`, each start timed. */
async function ownServer(
  url: string,
  start: () => Promise<void>,
  stop: () => Promise<void>,
): Promise<OwnServer> {
  const own: OwnServer = {
    url,
    startMs: 0,
    async restart() {
      await stop();
      await timedStart();
    },
    stop,
  };
  const timedStart = async () => {
    const began = Date.now();
    await start();
    own.startMs = Date.now() - began;
  };
  await timedStart();
  return own;
}

export interface CuttableProxy {
  port: number;
  /** Closes every connection through it and refuses new ones until `restore`. */
  cut(): Promise<void>;
  restore(): Promise<void>;
  stop(): Promise<void>;
}

/** A TCP proxy on a free loopback port to `target` (host:port). */
export async function startProxy(target: { host: string; port: number }): Promise<CuttableProxy> {
  const port = await freePort();
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = createServer((inbound) => {
        const outbound = connect(target.port, target.host);
        for (const s of [inbound, outbound]) {
          sockets.add(s);
          s.on("close", () => sockets.delete(s));
          s.on("error", () => {
            inbound.destroy();
            outbound.destroy();
          });
        }
        inbound.pipe(outbound).pipe(inbound);
      });
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve());
    });
  const close = async () => {
    const closing = new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    for (const s of sockets) s.destroy();
    await closing;
    server = undefined;
  };
  await listen();
  return { port, cut: close, restore: listen, stop: close };
}
