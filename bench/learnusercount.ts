/**
 * `pnpm bench`: GET /user/learnusercount through gateway → RabbitMQ → users service → Postgres,
 * against the same handler served in-process by fastify. Same connections, same duration, same
 * database; each side in its own processes. Prints req/s, p50 and p99 of both and their ratio.
 *
 *   pnpm bench [-- --connections 64 --duration 10]
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { createTestVhost } from "@fundraise/bus/testing";
import { createTestDatabase } from "@fundraise/service-kit/testing";
import autocannon from "autocannon";
import { freePort } from "../scripts/lib/processes.ts";
import { benchProcesses, ready } from "./lib/services.ts";

const { values } = parseArgs({
  // `pnpm bench -- --x` passes the `--` through.
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: { connections: { type: "string", default: "64" }, duration: { type: "string", default: "10" } },
});
const connections = Number(values.connections);
const duration = Number(values.duration);

const processes = benchProcesses([]);
const run = processes.run;

async function load(url: string) {
  // A short warm-up first: JIT, connection pools and broker channels settle before measuring.
  await autocannon({ url, connections, duration: 2 });
  const result = await autocannon({ url, connections, duration });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${url}: ${result.non2xx} non-2xx answers and ${result.errors} errors`);
  }
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

const [db, vhost] = await Promise.all([createTestDatabase("bench"), createTestVhost("bench")]);
try {
  const gatewayPort = await freePort();
  const inProcessPort = await freePort();
  const shared = { DATABASE_URL: db.url, AMQP_URL: vhost.url };
  run("services/users/src/main.ts", shared);
  run("services/gateway/src/main.ts", {
    ...shared,
    PORT: String(gatewayPort),
    REDIS_PREFIX: `bench:${randomBytes(4).toString("hex")}:`,
    RATE_LIMIT_PER_MINUTE: "100000000",
  });
  run("bench/in-process-server.ts", { ...shared, PORT: String(inProcessPort) });
  const viaBus = `http://127.0.0.1:${gatewayPort}/user/learnusercount`;
  const direct = `http://127.0.0.1:${inProcessPort}/user/learnusercount`;
  await Promise.all([ready(viaBus), ready(direct)]);

  const a = await load(viaBus);
  const b = await load(direct);
  const row = (name: string, r: typeof a) =>
    `${name.padEnd(36)} ${r.rps.toFixed(0).padStart(8)} ${String(r.p50).padStart(8)} ${String(r.p99).padStart(8)}`;
  console.log(`\nGET /user/learnusercount, ${connections} connections, ${duration} s each\n`);
  console.log(`${"".padEnd(36)} ${"req/s".padStart(8)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)}`);
  console.log(row("gateway → RabbitMQ → users → Postgres", a));
  console.log(row("fastify in-process → Postgres", b));
  console.log(
    `\nratio (through the bus / in-process): throughput ${(a.rps / b.rps).toFixed(2)}×, ` +
      `p50 ${(a.p50 / b.p50).toFixed(2)}×, p99 ${(a.p99 / b.p99).toFixed(2)}×`,
  );
} finally {
  await processes.stopAll();
  await Promise.all([db.dispose(), vhost.dispose()]);
}
