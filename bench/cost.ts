/**
 * `pnpm bench:cost`: CPU time per request of GET /user/learnusercount through gateway → RabbitMQ →
 * users → Postgres, split by process (read from /proc, so it holds on a busy machine where req/s does
 * not). Where `pnpm bench` says how fast, this says where the time goes and what a change saved.
 *
 *   pnpm bench:cost [-- --requests 20000 --connections 64 --profile .local/profiles]
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createTestVhost } from "@fundraise/bus/testing";
import { createTestDatabase } from "@fundraise/service-kit/testing";
import autocannon from "autocannon";
import { freePort, stopProcess } from "../scripts/lib/processes.ts";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    requests: { type: "string", default: "20000" },
    connections: { type: "string", default: "64" },
    /** Write a V8 CPU profile of every service process into this folder (`node --cpu-prof`). */
    profile: { type: "string" },
  },
});
const requests = Number(values.requests);
const connections = Number(values.connections);
const root = join(import.meta.dirname, "..");
const TICKS_PER_SECOND = 100;

const children: ChildProcess[] = [];
function run(script: string, env: Record<string, string>): ChildProcess {
  const profile = values.profile ? ["--cpu-prof", `--cpu-prof-dir=${values.profile}`] : [];
  const child = spawn(process.execPath, [...profile, "--import", "tsx", script], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "ignore", "inherit"],
  });
  children.push(child);
  return child;
}

/** CPU milliseconds (user + system) a process has used so far. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

const pidsOf = (name: string): number[] => {
  try {
    return execFileSync("pgrep", ["-x", name], { encoding: "utf8" }).trim().split("\n").map(Number);
  } catch {
    return [];
  }
};

async function ready(url: string): Promise<void> {
  const until = Date.now() + 60_000;
  while (Date.now() < until) {
    if ((await fetch(url).catch(() => undefined))?.ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer 200 within 60 s`);
}

const [db, vhost] = await Promise.all([createTestDatabase("bench"), createTestVhost("bench")]);
try {
  const port = await freePort();
  const shared = { DATABASE_URL: db.url, AMQP_URL: vhost.url };
  const users = run("services/users/src/main.ts", shared);
  const gateway = run("services/gateway/src/main.ts", {
    ...shared,
    PORT: String(port),
    REDIS_PREFIX: `bench:${randomBytes(4).toString("hex")}:`,
    RATE_LIMIT_PER_MINUTE: "100000000",
  });
  const inProcessPort = await freePort();
  const inProcess = run("bench/in-process-server.ts", { ...shared, PORT: String(inProcessPort) });
  const viaBus = `http://127.0.0.1:${port}/user/learnusercount`;
  const direct = `http://127.0.0.1:${inProcessPort}/user/learnusercount`;
  await Promise.all([ready(viaBus), ready(direct)]);
  const infrastructure = {
    rabbitmq: pidsOf("beam.smp"),
    postgres: pidsOf("postgres"),
    "redis-server": pidsOf("redis-server"),
    "load (autocannon)": [process.pid],
  };
  await measure("through the bus", viaBus, {
    gateway: [gateway.pid as number],
    users: [users.pid as number],
    ...infrastructure,
  });
  await measure("in-process", direct, { "fastify + pg": [inProcess.pid as number], ...infrastructure });
} finally {
  await Promise.all(children.map((child) => stopProcess(child)));
  await Promise.all([db.dispose(), vhost.dispose()]);
}

async function measure(name: string, url: string, processes: Record<string, number[]>): Promise<void> {
  await autocannon({ url, connections, amount: Math.min(requests, 5_000) });
  const total = (pids: number[]) => pids.reduce((sum, pid) => sum + safeCpuMs(pid), 0);
  const before = Object.fromEntries(Object.entries(processes).map(([name, pids]) => [name, total(pids)]));
  const started = Date.now();
  const result = await autocannon({ url, connections, amount: requests });
  const elapsed = (Date.now() - started) / 1000;
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${result.non2xx} non-2xx, ${result.errors} errors`);

  console.log(`\n${name}: GET /user/learnusercount, ${requests} requests at ${connections} connections`);
  console.log(`${(requests / elapsed).toFixed(0)} req/s (wall clock: meaningful on an idle machine only)\n`);
  console.log(`${"process".padEnd(20)} ${"CPU µs/request".padStart(15)}`);
  let sum = 0;
  for (const [name, pids] of Object.entries(processes)) {
    const us = ((total(pids) - (before[name] as number)) * 1000) / requests;
    if (name !== "load (autocannon)") sum += us;
    console.log(`${name.padEnd(20)} ${us.toFixed(0).padStart(15)}`);
  }
  console.log(`${"system (no load)".padEnd(20)} ${sum.toFixed(0).padStart(15)}`);
}

function safeCpuMs(pid: number): number {
  try {
    return cpuMs(pid);
  } catch {
    return 0; // a postgres backend that ended in between
  }
}
