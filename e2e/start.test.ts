import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestVhost, type TestVhost } from "@fundraise/bus/testing";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../scripts/lib/processes.ts";

// The README's start command as a user runs it: the whole system as separate processes on a real
// broker, database, Redis and local chain; only the ports, names and state folder are this run's own.
const root = join(import.meta.dirname, "..");
let vhost: TestVhost;
let start: ChildProcess;
let output = "";
let port: number;
let chainPort: number;
let ipfsPort: number;
let metricsPort: number;
const database = `t_start_${randomBytes(5).toString("hex")}`;
const stateDir = mkdtempSync(join(tmpdir(), "fundraise-start-"));

beforeAll(async () => {
  vhost = await createTestVhost("e2e");
  [port, chainPort, metricsPort, ipfsPort] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
    freePort(),
  ]);
  start = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      // As a copied .env.example has them: set, on loopback, with nothing answering yet. pnpm start starts
      // the local chain and IPFS stand-in there, as it does when they are unset.
      CHAIN_RPC_URL: `http://127.0.0.1:${chainPort}`,
      CHAIN_DEPLOYMENT_FILE: join(stateDir, "no-such-deployment.json"),
      IPFS_API_URL: `http://127.0.0.1:${ipfsPort}`,
      METRICS_PORT: String(metricsPort),
      // A database that does not exist yet: start creates it.
      DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`,
      AMQP_URL: vhost.url,
      REDIS_PREFIX: `test:${randomBytes(4).toString("hex")}:`,
      LOCAL_STATE_DIR: stateDir,
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  start.stdout?.on("data", (chunk) => (output += chunk));
  start.stderr?.on("data", (chunk) => (output += chunk));
  const until = Date.now() + 150_000;
  while (!output.includes(`Gateway: http://localhost:${port}`)) {
    if (Date.now() > until || start.exitCode !== null) throw new Error(`start did not come up:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
});

afterAll(async () => {
  if (start && start.exitCode === null) start.kill("SIGKILL");
  await vhost?.dispose();
  const admin = new pg.Client({ connectionString: "postgres://postgres@127.0.0.1:5432/postgres" });
  await admin.connect();
  await admin.query(`drop database if exists "${database}" with (force)`);
  await admin.end();
  rmSync(stateDir, { recursive: true, force: true });
});

describe("pnpm start", () => {
  it("serves learnusercount through gateway → RabbitMQ → users → Postgres", async () => {
    for (const path of ["/user/learnusercount", "/User/LearnUserCount/"]) {
      const res = await fetch(`http://localhost:${port}${path}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ data: 0, success: true, message: null });
    }
  });

  it("runs the chain-indexer on the local chain: the event-debug routes answer from its index", async () => {
    // A fresh local chain has no evaluation yet: an empty log, in the envelope.
    const res = await fetch(`http://localhost:${port}/EventDebug/Debug`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: [], success: true, message: null });
  });

  it("serves Prometheus metrics on the internal port only", async () => {
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(/^http_request_duration_seconds_count\{[^}]*route="\/user\/learnusercount"/m);
    // The gateway's side of the call behind it, on the same registry (service-kit's process metrics).
    expect(text).toMatch(
      /^rpc_client_duration_seconds_count\{route="users\.user\.count",outcome="ok"\} [1-9]/m,
    );
    expect(text).toContain('service_info{service="gateway"} 1');
    const open = await fetch(`http://localhost:${port}/metrics`);
    expect(open.status).toBe(404);
    expect(await open.json()).toEqual({ data: null, success: false, message: "No route GET /metrics." });
  });

  it("runs a local chain with the platform deployed", async () => {
    const res = await fetch(`http://127.0.0.1:${chainPort}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    });
    expect(((await res.json()) as { result: string }).result).toBe("0x7a69");
  });

  it("runs a local IPFS stand-in, and every service stays up (storage on that node)", async () => {
    const res = await fetch(`http://127.0.0.1:${ipfsPort}/api/v0/version`, { method: "POST" });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { Version: string }).Version).toMatch(/stand-in/);
    // Its read-only gateway, for the web client's images and downloads, is named in the banner.
    expect(output).toContain(
      `IPFS gateway (read-only, for the web client): http://127.0.0.1:${ipfsPort}/ipfs/`,
    );
    expect(output).not.toContain("service exited");
    expect(output).not.toContain("failed to start");
  });

  it("stops every process cleanly on Ctrl-C", async () => {
    const exited = new Promise<number | null>((resolve) => start.once("exit", (code) => resolve(code)));
    start.kill("SIGINT");
    expect(await exited).toBe(0);
    await expect(fetch(`http://localhost:${port}/healthz`)).rejects.toThrow();
    await expect(fetch(`http://127.0.0.1:${chainPort}`, { method: "POST" })).rejects.toThrow();
    await expect(fetch(`http://127.0.0.1:${ipfsPort}/api/v0/version`, { method: "POST" })).rejects.toThrow();
  });
});
