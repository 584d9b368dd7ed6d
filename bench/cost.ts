/**
 * `pnpm bench:cost`: CPU time per request of GET /user/learnusercount through gateway → RabbitMQ →
 * users → Postgres, split by process (read from /proc, so it holds on a busy machine where req/s does
 * not). Where `pnpm bench` says how fast, this says where the time goes and what a change saved.
 *
 *   pnpm bench:cost [-- --requests 20000 --connections 64 --profile .local/profiles]
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { createTestVhost } from "@fundraise/bus/testing";
import { createTestDatabase } from "@fundraise/service-kit/testing";
import autocannon from "autocannon";
import { freePort } from "../scripts/lib/processes.ts";
import { cpuPerOperation, pidsOf, printCpuTable } from "./lib/cpu.ts";
import { benchProcesses, ready } from "./lib/services.ts";

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
const LOAD = "load (autocannon)";

const processes = benchProcesses(values.profile ? ["--cpu-prof", `--cpu-prof-dir=${values.profile}`] : []);
const run = processes.run;

const [db, vhost] = await Promise.all([createTestDatabase("bench"), createTestVhost("bench")]);
try {
  const port = await freePort();
  const shared = { DATABASE_URL: db.url, AMQP_URL: vhost.url };
  const users = processes.service("users", shared);
  const gateway = processes.service("gateway", {
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
    rabbitmq: () => pidsOf("beam.smp"),
    postgres: () => pidsOf("postgres"),
    "redis-server": () => pidsOf("redis-server"),
    [LOAD]: () => [process.pid],
  };
  await measure("through the bus", viaBus, {
    gateway: () => [gateway.pid as number],
    users: () => [users.pid as number],
    ...infrastructure,
  });
  await measure("in-process", direct, { "fastify + pg": () => [inProcess.pid as number], ...infrastructure });
} finally {
  await processes.stopAll();
  await Promise.all([db.dispose(), vhost.dispose()]);
}

async function measure(name: string, url: string, groups: Record<string, () => number[]>): Promise<void> {
  await autocannon({ url, connections, amount: Math.min(requests, 5_000) });
  const started = Date.now();
  const { perOperationUs } = await cpuPerOperation(groups, async () => {
    const result = await autocannon({ url, connections, amount: requests });
    if (result.non2xx > 0 || result.errors > 0) {
      throw new Error(`${result.non2xx} non-2xx, ${result.errors} errors`);
    }
    return { result, operations: requests };
  });
  const elapsed = (Date.now() - started) / 1000;
  console.log(`\n${name}: GET /user/learnusercount, ${requests} requests at ${connections} connections`);
  console.log(`${(requests / elapsed).toFixed(0)} req/s (wall clock: meaningful on an idle machine only)`);
  printCpuTable(perOperationUs, "request", [LOAD]);
}
