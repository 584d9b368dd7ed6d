/**
 * `pnpm start`: the whole system on one machine with local defaults (architecture.md, "Running it").
 * Creates the database when missing, starts a local chain when CHAIN_RPC_URL is unset, starts every
 * service as its own process, prints the gateway URL, and stops everything cleanly on Ctrl-C.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "@fundraise/service-kit";
import pg from "pg";
import { stopProcess } from "./lib/processes.ts";
import { startLocalChain } from "./local-chain.ts";

const root = join(import.meta.dirname, "..");
if (existsSync(join(root, ".env"))) process.loadEnvFile(join(root, ".env"));

const log = createLogger({ service: "start", level: process.env.LOG_LEVEL ?? "info" });
const env: Record<string, string | undefined> = {
  DATABASE_URL: "postgres://postgres@127.0.0.1:5432/fundraising",
  AMQP_URL: "amqp://guest:guest@127.0.0.1:5672",
  REDIS_URL: "redis://127.0.0.1:6379",
  PORT: "8080",
  ...process.env,
};
const gatewayUrl = `http://localhost:${env.PORT}`;

/** Services in start order: the gateway last, so its routes find their services ready. */
const services = readdirSync(join(root, "services"))
  .filter((name) => existsSync(join(root, "services", name, "src", "main.ts")))
  .sort((a, b) => Number(a === "gateway") - Number(b === "gateway") || a.localeCompare(b));

const children = new Map<string, ChildProcess>();
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

function startService(name: string, restarts = 0): void {
  const child = spawn(process.execPath, ["--import", "tsx", join("services", name, "src", "main.ts")], {
    cwd: root,
    env: env as NodeJS.ProcessEnv,
    stdio: "inherit",
  });
  children.set(name, child);
  child.on("exit", (code, signal) => {
    children.delete(name);
    if (stopping) return;
    if (restarts >= 5) {
      log.error({ service: name, code, signal }, "service keeps crashing; stopping everything");
      void stop(1);
      return;
    }
    const delay = 500 * 2 ** restarts;
    log.warn({ service: name, code, signal, restartInMs: delay }, "service exited; restarting");
    setTimeout(() => startService(name, restarts + 1), delay);
  });
}

async function waitForGateway(timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until && !stopping) {
    const ready = await fetch(`${gatewayUrl}/readyz`)
      .then((r) => r.ok)
      .catch(() => false);
    if (ready) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    log.info("stopping");
    await Promise.all([...children.values()].map((child) => stopProcess(child)));
    for (const cleanup of cleanups.reverse())
      await cleanup().catch((err) => log.warn({ err }, "cleanup failed"));
  }
  process.exit(code);
}

process.on("SIGINT", () => void stop(0));
process.on("SIGTERM", () => void stop(0));

try {
  await ensureDatabase(env.DATABASE_URL as string);
  if (!env.CHAIN_RPC_URL) {
    const chain = await startLocalChain({
      stateDir: env.LOCAL_STATE_DIR ?? join(root, ".local"),
      port: Number(env.CHAIN_PORT ?? 8545),
      log,
    });
    env.CHAIN_RPC_URL = chain.url;
    env.CHAIN_DEPLOYMENT_FILE = chain.deploymentFile;
    cleanups.push(chain.stop);
  }
  for (const name of services) startService(name);
  if (await waitForGateway(60_000)) {
    log.info({ url: gatewayUrl, docs: `${gatewayUrl}/docs`, services }, "system ready");
    process.stdout.write(`\n  Gateway: ${gatewayUrl}   API docs: ${gatewayUrl}/docs   (Ctrl-C stops)\n\n`);
  } else if (!stopping) {
    log.error("the gateway did not become ready within 60 s");
    await stop(1);
  }
} catch (err) {
  log.fatal({ err }, "start-up failed");
  await stop(1);
}
