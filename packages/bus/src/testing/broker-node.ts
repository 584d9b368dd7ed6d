/**
 * A RabbitMQ node of a test's own, beside the shared local broker: its own node name, AMQP port,
 * distribution port, data, logs, config, plugins (none) and Erlang cookie, all under a temporary folder.
 * The test can stop and start it for real without disturbing the test files that use the shared broker.
 *
 * Needs the RabbitMQ server scripts: `RABBITMQ_SERVER` / `RABBITMQ_CTL`, else the Debian package's
 * `/usr/lib/rabbitmq/bin` (its `/usr/sbin` wrappers would switch to the rabbitmq user), else PATH.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes, randomInt } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import amqp from "amqplib";

const run = promisify(execFile);
const DEBIAN_BIN = "/usr/lib/rabbitmq/bin";

function script(name: "rabbitmq-server" | "rabbitmqctl", override: string | undefined): string {
  if (override) return override;
  const debian = join(DEBIAN_BIN, name);
  return existsSync(debian) ? debian : name;
}

/** Whether `port` can be bound on every interface right now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer().once("error", () => resolve(false));
    server.listen(port, "0.0.0.0", () => server.close(() => resolve(true)));
  });
}

/**
 * A free port in [20000, 30000): below the kernel's ephemeral range, and low enough that the CLI's
 * distribution ports (this port + 10000 … + 10010, RabbitMQ's default) exist too.
 */
async function freeLowPort(taken: number[] = []): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = randomInt(20_000, 30_000);
    if (!taken.includes(port) && (await bindable(port))) return port;
  }
  throw new Error("no free port in 20000-29999");
}

export interface BrokerNode {
  /** amqp://guest:guest@127.0.0.1:<port>/ (the default vhost of this node only). */
  url: string;
  nodename: string;
  /** Stops the broker (`rabbitmqctl stop_app`): listeners and every connection close; the node stays. */
  stop(): Promise<void>;
  /** Starts it again (`rabbitmqctl start_app`) and resolves once it accepts AMQP connections. */
  start(): Promise<void>;
  /** Stops the node and removes its folder. Safe to call twice. */
  dispose(): Promise<void>;
}

/** Starts a node and resolves once it accepts AMQP connections (a few seconds). */
export async function startBrokerNode(options: { startTimeoutMs?: number } = {}): Promise<BrokerNode> {
  const dir = mkdtempSync(join(tmpdir(), "bus-broker-"));
  const nodename = `bus_test_${randomBytes(4).toString("hex")}@localhost`;
  const port = await freeLowPort();
  const distPort = await freeLowPort([port]);
  writeFileSync(join(dir, "rabbitmq.conf"), `listeners.tcp.1 = 127.0.0.1:${port}\n`);
  writeFileSync(join(dir, "enabled_plugins"), "[].\n");
  // An empty env file instead of the system's (which names the shared node).
  writeFileSync(join(dir, "rabbitmq-env.conf"), "");
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // The Erlang cookie is created in and read from $HOME: this node's own.
    HOME: dir,
    RABBITMQ_NODENAME: nodename,
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_CONF_ENV_FILE: join(dir, "rabbitmq-env.conf"),
    RABBITMQ_CONFIG_FILE: join(dir, "rabbitmq.conf"),
    RABBITMQ_ADVANCED_CONFIG_FILE: join(dir, "advanced.config"),
    RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, "enabled_plugins"),
    RABBITMQ_PLUGINS_EXPAND_DIR: join(dir, "plugins-expand"),
    RABBITMQ_MNESIA_BASE: join(dir, "mnesia"),
    RABBITMQ_LOG_BASE: join(dir, "log"),
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: "-kernel inet_dist_use_interface {127,0,0,1}",
  };
  // The AMQP listener is the config file's only; a port from the environment would add a second one.
  delete env.RABBITMQ_NODE_PORT;
  delete env.RABBITMQ_NODE_IP_ADDRESS;
  const url = `amqp://guest:guest@127.0.0.1:${port}/`;

  let output = "";
  const server: ChildProcess = spawn(script("rabbitmq-server", process.env.RABBITMQ_SERVER), [], {
    env,
    cwd: dir,
    stdio: ["ignore", "pipe", "pipe"],
  });
  server.stdout?.on("data", (chunk) => (output = (output + chunk).slice(-8000)));
  server.stderr?.on("data", (chunk) => (output = (output + chunk).slice(-8000)));
  const exited = new Promise<void>((resolve) => server.once("exit", () => resolve()));
  // A crashed test process must not leave the node running.
  const killOnExit = () => server.kill("SIGKILL");
  process.once("exit", killOnExit);

  const ctl = async (...args: string[]) => {
    await run(script("rabbitmqctl", process.env.RABBITMQ_CTL), ["-q", "-n", nodename, ...args], {
      env,
      cwd: dir,
      timeout: 60_000,
    });
  };

  async function accepting(timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      if (server.exitCode !== null || server.signalCode !== null) {
        throw new Error(`the RabbitMQ node ${nodename} exited:\n${output}`);
      }
      const connection = await amqp.connect(url).catch(() => undefined);
      if (connection) {
        await connection.close();
        return;
      }
      if (Date.now() > until) throw new Error(`the RabbitMQ node ${nodename} did not start:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  let disposed = false;
  const dispose = async () => {
    if (disposed) return;
    disposed = true;
    if (server.exitCode === null && server.signalCode === null) {
      server.kill("SIGTERM");
      const kill = setTimeout(() => server.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(kill);
    }
    process.removeListener("exit", killOnExit);
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    await accepting(options.startTimeoutMs ?? 60_000);
  } catch (error) {
    await dispose();
    throw error;
  }
  return {
    url,
    nodename,
    stop: () => ctl("stop_app"),
    async start() {
      await ctl("start_app");
      await accepting(30_000);
    },
    dispose,
  };
}
