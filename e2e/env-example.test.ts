import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseEnv } from "node:util";
import { createTestVhost, type TestVhost } from "@fundraise/bus/testing";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../scripts/lib/processes.ts";

// The README's newcomer steps, `cp .env.example .env && pnpm start`, on a fresh state folder: the copied
// file must give the same system as no .env (a local chain with the contracts deployed, the IPFS
// stand-in, every service ready). The copy is loaded with node's --env-file, the same parser and the same
// precedence (the environment wins) as pnpm start's own .env loading, so the repository's .env is left
// alone; the environment below only moves ports, names and the state folder to this run's own.
const root = join(import.meta.dirname, "..");
let vhost: TestVhost;
let start: ChildProcess;
let output = "";
let port: number;
let chainPort: number;
let ipfsPort: number;
const database = `t_envex_${randomBytes(5).toString("hex")}`;
const stateDir = mkdtempSync(join(tmpdir(), "fundraise-env-example-"));
const envFile = join(stateDir, ".env");

beforeAll(async () => {
  copyFileSync(join(root, ".env.example"), envFile);
  vhost = await createTestVhost("e2e");
  let metricsPort: number;
  [port, chainPort, ipfsPort, metricsPort] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
    freePort(),
  ]);
  start = spawn(process.execPath, [`--env-file=${envFile}`, "--import", "tsx", "scripts/start.ts"], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      // Where pnpm start runs its local chain and IPFS stand-in (8545 and 5001 by default).
      CHAIN_PORT: String(chainPort),
      IPFS_PORT: String(ipfsPort),
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
  if (start && start.exitCode === null) {
    const exited = new Promise((resolve) => start.once("exit", resolve));
    start.kill("SIGINT");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))]);
    if (start.exitCode === null) start.kill("SIGKILL");
  }
  await vhost?.dispose();
  const admin = new pg.Client({ connectionString: "postgres://postgres@127.0.0.1:5432/postgres" });
  await admin.connect();
  await admin.query(`drop database if exists "${database}" with (force)`);
  await admin.end();
  rmSync(stateDir, { recursive: true, force: true });
});

describe("cp .env.example .env && pnpm start", () => {
  it("leaves what pnpm start provides itself unset in the copy", () => {
    const values = parseEnv(readFileSync(envFile, "utf8"));
    for (const name of ["CHAIN_RPC_URL", "CHAIN_DEPLOYMENT_FILE", "IPFS_API_URL"]) {
      expect(values, name).not.toHaveProperty(name);
    }
    expect(readFileSync(envFile, "utf8")).toMatch(/^# CHAIN_RPC_URL=/m);
  });

  it("runs the local chain with the platform deployed, and its deployment file", async () => {
    const res = await fetch(`http://127.0.0.1:${chainPort}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    });
    expect(((await res.json()) as { result: string }).result).toBe("0x7a69");
    expect(existsSync(join(stateDir, "chain", "deployment.json"))).toBe(true);
  });

  it("runs the local IPFS stand-in", async () => {
    const res = await fetch(`http://127.0.0.1:${ipfsPort}/api/v0/version`, { method: "POST" });
    expect(((await res.json()) as { Version: string }).Version).toMatch(/stand-in/);
  });

  it("serves through every service, and none of them exited", async () => {
    const res = await fetch(`http://localhost:${port}/user/learnusercount`);
    expect(await res.json()).toEqual({ data: 0, success: true, message: null });
    // Auth runs only once it read the deployment file: a nonce is the first step of sign-in.
    const nonce = await fetch(
      `http://localhost:${port}/Authentication/GetNonce/0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266`,
    );
    expect(nonce.status).toBe(200);
    expect(output).not.toContain("service exited");
    expect(output).not.toContain("failed to start");
  });
});
