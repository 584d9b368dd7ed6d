/**
 * `pnpm bench:logins`: sign-ins per second through the gateway, each one the full client sequence
 * GetNonce → personal_sign → Login, on the whole system as separate processes (users, auth, gateway,
 * a real chain for the role refresh). The clients run in a process of their own (bench/login-client.ts).
 * Prints logins/s and p50/p99 of the sequence.
 *
 *   pnpm bench:logins [-- --users 20 --concurrency 10 --duration 10]
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Wallet } from "ethers";
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
  const child = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, "login-client.ts")], {
    env: {
      ...process.env,
      GATEWAY_URL: sys.gatewayUrl,
      WALLET_KEYS: wallets.map((w) => w.privateKey).join(","),
      CONCURRENCY: String(concurrency),
      DURATION_MS: String(durationMs),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (chunk) => (out += chunk));
  const anvilPort = new URL(sys.anvil.url).port;
  const groups: Record<string, () => number[]> = {
    ...Object.fromEntries(Object.entries(sys.pids).map(([name, pid]) => [name, () => [pid]])),
    rabbitmq: () => pidsOf("beam.smp"),
    postgres: () => pidsOf("postgres"),
    "redis-server": () => pidsOf("redis-server"),
    anvil: () => pidsOf(`anvil.*${anvilPort}`, true),
  };
  const { result, perOperationUs } = await cpuPerOperation(groups, async () => {
    const text = await new Promise<string>((resolve) => child.stdout.once("end", () => resolve(out)));
    const parsed = JSON.parse(text) as {
      latencies: number[];
      failures: number;
      seconds: number;
      cpuMs: number;
      kernelMs: number;
    };
    return { result: parsed, operations: parsed.latencies.length };
  });
  // The clients measure their own CPU time (their process is gone by now).
  const perLogin = (ms: number) => (ms * 1000) / Math.max(result.latencies.length, 1);
  perOperationUs[LOAD] = { total: perLogin(result.cpuMs), kernel: perLogin(result.kernelMs) };
  const code = child.exitCode ?? (await new Promise<number | null>((resolve) => child.on("exit", resolve)));
  if (code !== 0) throw new Error(`the load generator exited with ${code}`);
  const { latencies, failures, seconds } = result;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
  console.log(
    `\nsign-in (GetNonce → sign → Login) through the gateway, ${concurrency} concurrent clients, ${users} users\n`,
  );
  console.log(`logins/s   ${(latencies.length / seconds).toFixed(1)}`);
  console.log(`p50 ms     ${pct(50).toFixed(1)}`);
  console.log(`p99 ms     ${pct(99).toFixed(1)}`);
  console.log(`logins     ${latencies.length} in ${seconds.toFixed(1)} s, ${failures} failed`);
  printCpuTable(perOperationUs, "login", [LOAD]);
} finally {
  await sys.stop();
}
