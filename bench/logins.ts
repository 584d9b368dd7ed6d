/**
 * `pnpm bench:logins`: sign-ins per second through the gateway, each one the full client sequence
 * GetNonce → personal_sign → Login, on the whole system as separate processes (users, auth, gateway,
 * a real chain for the role refresh). The clients run in a process of their own (bench/login-client.ts).
 * Then the same clients against the baseline, the same sign-in work served in one process with no broker
 * and no gateway (bench/in-process-logins.ts: the auth service's use cases, same Redis and Postgres
 * writes, the same chain), on a database of its own. Prints logins/s and p50/p99 of both and their ratio.
 *
 *   pnpm bench:logins [-- --users 20 --concurrency 10 --duration 10]
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { writeDeployment } from "@fundraise/contracts";
import { createTestDatabase } from "@fundraise/service-kit/testing";
import { Wallet } from "ethers";
import { stopProcess } from "../scripts/lib/processes.ts";
import { cpuPerOperation, pidsOf, printCpuTable } from "./lib/cpu.ts";
import { liftRateLimits } from "./lib/services.ts";

const LOAD = "clients (load)";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    users: { type: "string", default: "20" },
    concurrency: { type: "string", default: "10" },
    duration: { type: "string", default: "10" },
  },
});
const users = Number(values.users);
const concurrency = Number(values.concurrency);
const durationMs = Number(values.duration) * 1000;

liftRateLimits();
const { startSystem } = await import("../e2e/system.ts");
const sys = await startSystem();

async function post(path: string, body: unknown) {
  const res = await fetch(`${sys.gatewayUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { data: unknown } };
}

interface ClientResult {
  latencies: number[];
  failures: number;
  seconds: number;
  cpuMs: number;
  kernelMs: number;
}

/** The load generator (bench/login-client.ts) against `url`, in a process of its own. */
function startClients(url: string, wallets: { address: string; privateKey: string }[]) {
  const child = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, "login-client.ts")], {
    env: {
      ...process.env,
      GATEWAY_URL: url,
      WALLET_KEYS: wallets.map((w) => w.privateKey).join(","),
      CONCURRENCY: String(concurrency),
      DURATION_MS: String(durationMs),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (chunk) => (out += chunk));
  const result = async (): Promise<ClientResult> => {
    const text = await new Promise<string>((resolve) => child.stdout.once("end", () => resolve(out)));
    const code = child.exitCode ?? (await new Promise<number | null>((resolve) => child.on("exit", resolve)));
    if (code !== 0) throw new Error(`the load generator exited with ${code}`);
    return JSON.parse(text) as ClientResult;
  };
  return { result };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

/**
 * The baseline: bench/in-process-logins.ts on a database of its own (its users seeded with the same
 * wallets' addresses), this system's chain, a Redis prefix of its own; the same clients against it.
 */
async function baseline(wallets: { address: string; privateKey: string }[]): Promise<ClientResult> {
  const db = await createTestDatabase("bench_logins");
  const dir = mkdtempSync(join(tmpdir(), "bench-logins-"));
  const deploymentFile = join(dir, "deployment.json");
  writeDeployment(deploymentFile, sys.deployment);
  const server = spawn(
    process.execPath,
    ["--import", "tsx", join(import.meta.dirname, "in-process-logins.ts")],
    {
      env: {
        ...process.env,
        DATABASE_URL: db.url,
        REDIS_PREFIX: `test:${randomBytes(4).toString("hex")}:`,
        CHAIN_RPC_URL: sys.anvil.url,
        CHAIN_DEPLOYMENT_FILE: deploymentFile,
        SMTP_URL: "smtp://127.0.0.1:1",
        PUBLIC_BASE_URL: "http://localhost",
        MAIL_DIR: join(dir, "mail"),
        LOG_LEVEL: "warn",
        WALLET_ADDRESSES: wallets.map((w) => w.address).join(","),
        PORT: "0",
      },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      server.stdout.on("data", (chunk) => {
        out += chunk;
        const listening = /listening (\S+)/.exec(out)?.[1];
        if (listening) resolve(listening);
      });
      server.once("exit", (code) => reject(new Error(`the in-process baseline exited with ${code}`)));
    });
    return await startClients(url, wallets).result();
  } finally {
    await stopProcess(server);
    await db.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}

try {
  const wallets = Array.from({ length: users }, () => Wallet.createRandom());
  for (const [i, wallet] of wallets.entries()) {
    const mailAddress = `bench${i}@example.org`;
    const res = await post("/Authentication/Register", {
      name: "Bench",
      surname: "User",
      username: `bench_${i}`,
      mailAddress,
      signedMessage: await wallet.signMessage("REGISTER"),
    });
    if (res.status !== 201) throw new Error(`register: ${res.status} ${JSON.stringify(res.body)}`);
    const mail = await sys.mailbox.next(mailAddress);
    const link = /https?:\/\/\S+verify-email\?[^\s"<>]+/.exec(mail.text ?? "")?.[0] ?? "";
    const verified = await fetch(link.replaceAll("&amp;", "&"), { headers: { accept: "application/json" } });
    if (!verified.ok) throw new Error(`verify: ${verified.status}`);
  }

  // The clients run in a process of their own: signing and HTTP there, the system here and in its children.
  const clients = startClients(sys.gatewayUrl, wallets);
  const anvilPort = new URL(sys.anvil.url).port;
  const groups: Record<string, () => number[]> = {
    ...Object.fromEntries(Object.entries(sys.pids).map(([name, pid]) => [name, () => [pid]])),
    rabbitmq: () => pidsOf("beam.smp"),
    postgres: () => pidsOf("postgres"),
    "redis-server": () => pidsOf("redis-server"),
    anvil: () => pidsOf(`anvil.*${anvilPort}`, true),
  };
  const { result, perOperationUs } = await cpuPerOperation(groups, async () => {
    const parsed = await clients.result();
    return { result: parsed, operations: parsed.latencies.length };
  });
  // The clients measure their own CPU time (their process is gone by now).
  const perLogin = (ms: number) => (ms * 1000) / Math.max(result.latencies.length, 1);
  perOperationUs[LOAD] = { total: perLogin(result.cpuMs), kernel: perLogin(result.kernelMs) };
  const direct = await baseline(wallets);
  const rate = (r: ClientResult) => r.latencies.length / r.seconds;
  console.log(
    `\nsign-in (GetNonce → sign → Login), ${concurrency} concurrent clients, ${users} users, ${values.duration} s each\n`,
  );
  console.log(`${"".padEnd(12)}${"through the gateway".padStart(22)}${"in one process".padStart(18)}`);
  const row = (label: string, of: (r: ClientResult) => string) =>
    console.log(`${label.padEnd(12)}${of(result).padStart(22)}${of(direct).padStart(18)}`);
  for (const r of [result, direct]) r.latencies.sort((a, b) => a - b);
  row("logins/s", (r) => rate(r).toFixed(1));
  row("p50 ms", (r) => percentile(r.latencies, 50).toFixed(1));
  row("p99 ms", (r) => percentile(r.latencies, 99).toFixed(1));
  row("logins", (r) => `${r.latencies.length} in ${r.seconds.toFixed(1)} s`);
  row("failed", (r) => String(r.failures));
  console.log(
    `\nratio (through the gateway / in one process): throughput ${(rate(result) / Math.max(rate(direct), 1e-9)).toFixed(2)}×`,
  );
  printCpuTable(perOperationUs, "login", [LOAD]);
} finally {
  await sys.stop();
}
