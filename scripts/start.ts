/**
 * `pnpm start`: the whole system on one machine with local defaults (README, "Two commands").
 * Creates the database when missing; starts a local chain (anvil) and a local Kubo-RPC stand-in
 * (packages/ipfs-node, data in .local/ipfs) when CHAIN_RPC_URL or IPFS_API_URL is unset or a loopback URL
 * where nothing answers, so a copied .env.example gives the same system as no .env; starts every service as
 * its own process, prints the gateway URL, and stops everything cleanly on Ctrl-C.
 *
 * `pnpm start -- --scale users=3,gateway=2` runs several instances of a service (gateway replicas on
 * consecutive ports from PORT, listed in the banner); a crashed instance is started again within a budget
 * per minute (lib/instances.ts).
 *
 * The services write JSON log lines; this script reads them and, on a terminal, prints each event as one
 * readable line with its service's name (LOG_FORMAT, lib/log-format.ts). The banner with the gateway URL
 * comes once the start-up lines have settled, so that it is the last thing on the screen.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs, styleText } from "node:util";
import { startIpfsNode } from "@fundraise/ipfs-node";
import { createLogger, type Logger } from "@fundraise/service-kit";
import pg from "pg";
import pino from "pino";
import { instanceName, parseScale, restartBudget } from "./lib/instances.ts";
import { chooseLogFormat, createLineFormatter, type LogFormat } from "./lib/log-format.ts";
import { serviceNodeArgs, stopProcess } from "./lib/processes.ts";
import { missingServers } from "./lib/servers.ts";
import { startLocalChain } from "./local-chain.ts";

const root = join(import.meta.dirname, "..");
if (existsSync(join(root, ".env"))) process.loadEnvFile(join(root, ".env"));

/** Services in start order: the gateway last, so its routes find their services ready. */
const services = readdirSync(join(root, "services"))
  .filter((name) => existsSync(join(root, "services", name, "src", "main.ts")))
  .sort((a, b) => Number(a === "gateway") - Number(b === "gateway") || a.localeCompare(b));

let format: LogFormat;
let scale: Map<string, number>;
try {
  format = chooseLogFormat(process.env.LOG_FORMAT, process.stdout.isTTY === true);
  const { values } = parseArgs({
    args: process.argv.slice(2).filter((a) => a !== "--"),
    options: { scale: { type: "string" } },
  });
  scale = parseScale(values.scale, services);
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
/** Every instance to run, in start order: `[service, index]`. */
const instances = services.flatMap((name) =>
  Array.from({ length: scale.get(name) ?? 1 }, (_, i) => [name, i] as const),
);
const nameWidth = Math.max("start".length, ...instances.map(([name, i]) => instanceName(name, i).length));
let lastOutputAt = Date.now();
/** Every line on stdout goes through here, so the banner can wait for the start-up lines to settle. */
const print = (line: string) => {
  lastOutputAt = Date.now();
  process.stdout.write(`${line}\n`);
};

/** This script's own log: JSON as the services write it, or through the same formatter. */
function startLogger(level: string): Logger {
  if (format === "json") return createLogger({ service: "start", level });
  const formatLine = createLineFormatter({ format, service: "start", width: nameWidth });
  return pino(
    {
      level,
      base: { service: "start" },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: pino.stdSerializers.errWithCause },
    },
    { write: (chunk: string) => print(formatLine(chunk.trimEnd())) },
  );
}

const log = startLogger(process.env.LOG_LEVEL ?? "info");
const env: Record<string, string | undefined> = {
  DATABASE_URL: "postgres://postgres@127.0.0.1:5432/fundraising",
  AMQP_URL: "amqp://guest:guest@127.0.0.1:5672",
  REDIS_URL: "redis://127.0.0.1:6379",
  PORT: "8080",
  ...process.env,
};
const gatewayUrl = `http://localhost:${env.PORT}`;
/** The gateway replicas' URLs: consecutive ports from PORT. */
const gatewayUrls = Array.from(
  { length: scale.get("gateway") ?? 1 },
  (_, i) => `http://localhost:${Number(env.PORT) + i}`,
);

const children = new Map<string, ChildProcess>();
/** Services that said they serve; a restarted one says it again. */
const ready = new Set<string>();
/** Resolve when a child's output has been read to its end (its last lines printed). */
const outputsRead = new Set<Promise<unknown>>();
const cleanups: (() => Promise<void>)[] = [];
let stopping = false;

async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  const admin = new URL(url);
  admin.pathname = "/postgres";
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const found = await client.query("select 1 from pg_database where datname = $1", [name]);
    if (found.rowCount === 0) {
      await client.query(`create database "${name.replaceAll('"', '""')}"`);
      log.info({ database: name }, "database created");
    }
  } finally {
    await client.end();
  }
}

function startService(service: string, index: number, budget = restartBudget()): void {
  const name = instanceName(service, index);
  // A gateway replica listens on its own port; other instances share their service's queues. Extra
  // instances serve no internal port (it would clash with the first's).
  const own =
    index === 0
      ? {}
      : service === "gateway"
        ? { PORT: String(Number(env.PORT) + index), METRICS_PORT: "0" }
        : { HEALTH_PORT: "0" };
  const child = spawn(process.execPath, serviceNodeArgs(service), {
    cwd: root,
    env: { ...env, ...own } as NodeJS.ProcessEnv,
    // stdout is read line by line (the log); stderr (crashes, runtime warnings) goes straight through; the
    // IPC channel carries runService's "ready".
    stdio: ["inherit", "pipe", "inherit", "ipc"],
  });
  children.set(name, child);
  child.on("message", (message: { type?: unknown }) => {
    if (message?.type === "ready") ready.add(name);
  });
  if (child.stdout) {
    const formatLine = createLineFormatter({ format, service: name, width: nameWidth });
    const lines = createInterface({ input: child.stdout, crlfDelay: Number.POSITIVE_INFINITY });
    lines.on("line", (line) => print(formatLine(line)));
    const read = once(lines, "close").finally(() => outputsRead.delete(read));
    outputsRead.add(read);
  }
  child.on("exit", (code, signal) => {
    children.delete(name);
    ready.delete(name);
    if (stopping) return;
    const delay = budget.crashed();
    if (delay === null) {
      log.error(
        { service: name, code, signal },
        "service keeps crashing (over 5 times a minute); stopping everything",
      );
      void stop(1);
      return;
    }
    log.warn({ service: name, code, signal, restartInMs: delay }, "service exited; restarting");
    setTimeout(() => startService(service, index, budget), delay);
  });
}

const isLoopback = (url: URL) => ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);

/** Whether an EVM JSON-RPC endpoint answers at `url`. */
async function chainAnswers(url: string): Promise<boolean> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    signal: AbortSignal.timeout(1_000),
  }).then(
    (r) => r.ok,
    () => false,
  );
}

/**
 * The local chain (anvil, state in .local/chain, contracts deployed once): when CHAIN_RPC_URL is unset, or
 * names a loopback address where nothing answers (a copied .env.example), it is started on that port and
 * its deployment file is used.
 */
async function ensureChain(): Promise<void> {
  const configured = env.CHAIN_RPC_URL ? new URL(env.CHAIN_RPC_URL) : undefined;
  if (configured && (!isLoopback(configured) || (await chainAnswers(configured.href)))) return;
  const chain = await startLocalChain({
    stateDir: env.LOCAL_STATE_DIR ?? join(root, ".local"),
    port: Number(configured?.port || env.CHAIN_PORT || 8545),
    log,
  });
  env.CHAIN_RPC_URL = chain.url;
  env.CHAIN_DEPLOYMENT_FILE = chain.deploymentFile;
  cleanups.push(chain.stop);
}

/** Whether a Kubo RPC API answers at `url` (Kubo answers RPC calls to POST only). */
async function ipfsAnswers(url: string): Promise<boolean> {
  return fetch(new URL("/api/v0/version", url), { method: "POST", signal: AbortSignal.timeout(1_000) }).then(
    (r) => r.ok,
    () => false,
  );
}

/**
 * The local stand-in IPFS node, the way anvil stands in for a chain: when IPFS_API_URL is unset, or names
 * a loopback address where nothing answers (a copied .env.example), it is started on that port.
 */
/** Where the local node serves content read-only (`<this><cid>/<path>`, as Kubo's gateway); unset: a node of its own. */
let ipfsGateway: string | undefined;

async function ensureIpfs(): Promise<void> {
  const configured = env.IPFS_API_URL ? new URL(env.IPFS_API_URL) : undefined;
  if (configured && (!isLoopback(configured) || (await ipfsAnswers(configured.href)))) return;
  const node = await startIpfsNode({
    dataDir: join(env.LOCAL_STATE_DIR ?? join(root, ".local"), "ipfs"),
    host: "127.0.0.1",
    port: Number(configured?.port || env.IPFS_PORT || 5001),
  });
  env.IPFS_API_URL = node.url;
  ipfsGateway = `${node.url}/ipfs/`;
  cleanups.push(() => node.stop());
  log.info({ url: node.url }, "local IPFS stand-in started (a Kubo-RPC-compatible node, not Kubo)");
}

/** Until every service said it serves (runService's "ready") and the gateway is ready. */
async function waitForSystem(timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until && !stopping) {
    const gatewayReady =
      ready.size === instances.length &&
      (
        await Promise.all(
          gatewayUrls.map((url) =>
            fetch(`${url}/readyz`)
              .then((r) => r.ok)
              .catch(() => false),
          ),
        )
      ).every(Boolean);
    if (gatewayReady) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

/** Until nothing was printed for `quietMs` (services log their start-up for a moment), at most `maxMs`. */
async function outputSettled(quietMs: number, maxMs: number): Promise<void> {
  const until = Date.now() + maxMs;
  while (!stopping && Date.now() < until && Date.now() - lastOutputAt < quietMs) {
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    log.info("stopping");
    await Promise.all([...children.values()].map((child) => stopProcess(child)));
    // Their last lines (shutdown) are printed before this process exits.
    await Promise.race([Promise.all(outputsRead), new Promise((r) => setTimeout(r, 2_000))]);
    for (const cleanup of cleanups.reverse())
      await cleanup().catch((err) => log.warn({ err }, "cleanup failed"));
  }
  process.exit(code);
}

process.on("SIGINT", () => void stop(0));
process.on("SIGTERM", () => void stop(0));

// The servers this script does not start: one line each that does not answer, then exit 1 (no service
// is started to retry against them in a loop).
const missing = await missingServers(env);
if (missing.length > 0) {
  for (const line of missing) process.stderr.write(`${line}\n`);
  process.exit(1);
}

try {
  await ensureDatabase(env.DATABASE_URL as string);
  await ensureChain();
  await ensureIpfs();
  for (const [name, index] of instances) startService(name, index);
  if (await waitForSystem(60_000)) {
    await outputSettled(500, 5_000);
    const running = instances.map(([name, i]) => instanceName(name, i));
    log.info(
      { url: gatewayUrl, docs: `${gatewayUrl}/docs`, gateways: gatewayUrls, services: running },
      "system ready",
    );
    const replicas = gatewayUrls.length > 1 ? `   Replicas: ${gatewayUrls.slice(1).join(" ")}` : "";
    const content = ipfsGateway ? `\n  IPFS gateway (read-only, for the web client): ${ipfsGateway}` : "";
    const banner = `  Gateway: ${gatewayUrl}   API docs: ${gatewayUrl}/docs${replicas}   (Ctrl-C stops)${content}`;
    print(`\n${format === "pretty" ? styleText("bold", banner, { stream: process.stdout }) : banner}\n`);
  } else if (!stopping) {
    log.error(
      { waitingFor: instances.map(([name, i]) => instanceName(name, i)).filter((name) => !ready.has(name)) },
      "the system did not become ready within 60 s",
    );
    await stop(1);
  }
} catch (err) {
  log.fatal({ err }, "start-up failed");
  await stop(1);
}
