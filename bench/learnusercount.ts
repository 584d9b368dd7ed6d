/**
 * `pnpm bench`: GET /user/learnusercount through gateway → RabbitMQ → users service → Postgres,
 * against the same handler served in-process by fastify. Same connections, same duration, same
 * database; each side in its own processes. Prints req/s, p50 and p99 of both and their ratio.
 *
 * Both sides are warmed up first, then measured in alternating rounds (bus first in odd rounds,
 * in-process first in even ones), and the ratio is the median of the rounds' own ratios: on a shared
 * machine whose speed drifts by a third within minutes, one pair measured one after the other gave
 * anything from 0.40x to 0.73x for the same code (docs/adr/0006-measuring-performance.md).
 *
 *   pnpm bench [-- --connections 64 --duration 10 --rounds 3]
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { createTestVhost } from "@fundraise/bus/testing";
import { createTestDatabase } from "@fundraise/service-kit/testing";
import autocannon from "autocannon";
import { freePort } from "../scripts/lib/processes.ts";
import { benchProcesses, ready } from "./lib/services.ts";
import { median } from "./lib/stats.ts";

const { values } = parseArgs({
  // `pnpm bench -- --x` passes the `--` through.
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    connections: { type: "string", default: "64" },
    duration: { type: "string", default: "10" },
    rounds: { type: "string", default: "3" },
  },
});
const connections = Number(values.connections);
const duration = Number(values.duration);
const rounds = Math.max(1, Number(values.rounds));

const processes = benchProcesses([]);
const run = processes.run;

interface Figures {
  rps: number;
  p50: number;
  p99: number;
}

async function load(url: string): Promise<Figures> {
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
  processes.service("users", shared);
  processes.service("gateway", {
    ...shared,
    PORT: String(gatewayPort),
    REDIS_PREFIX: `bench:${randomBytes(4).toString("hex")}:`,
    RATE_LIMIT_PER_MINUTE: "100000000",
  });
  run("bench/in-process-server.ts", { ...shared, PORT: String(inProcessPort) });
  const viaBus = `http://127.0.0.1:${gatewayPort}/user/learnusercount`;
  const direct = `http://127.0.0.1:${inProcessPort}/user/learnusercount`;
  await Promise.all([ready(viaBus), ready(direct)]);

  // Warm-up: JIT, connection pools and broker channels settle before anything is measured.
  for (const url of [viaBus, direct]) await autocannon({ url, connections, duration: 5 });
  const bus: Figures[] = [];
  const inProcess: Figures[] = [];
  for (let round = 0; round < rounds; round++) {
    if (round % 2 === 0) {
      bus.push(await load(viaBus));
      inProcess.push(await load(direct));
    } else {
      inProcess.push(await load(direct));
      bus.push(await load(viaBus));
    }
  }
  const row = (name: string, r: Figures) =>
    `${name.padEnd(44)} ${r.rps.toFixed(0).padStart(8)} ${String(r.p50).padStart(8)} ${String(r.p99).padStart(8)}`;
  console.log(
    `\nGET /user/learnusercount, ${connections} connections, ${duration} s each, ${rounds} rounds\n`,
  );
  console.log(`${"".padEnd(44)} ${"req/s".padStart(8)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)}`);
  const ratios: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const [a, b] = [bus[round] as Figures, inProcess[round] as Figures];
    ratios.push(a.rps / b.rps);
    console.log(row(`round ${round + 1}: gateway → RabbitMQ → users → Postgres`, a));
    console.log(row(`round ${round + 1}: fastify in-process → Postgres`, b));
    console.log(`round ${round + 1}: ratio ${(a.rps / b.rps).toFixed(2)}×`);
  }
  const medianOf = (side: Figures[]): Figures => ({
    rps: median(side.map((f) => f.rps)),
    p50: median(side.map((f) => f.p50)),
    p99: median(side.map((f) => f.p99)),
  });
  console.log("\nmedians of the rounds");
  console.log(row("gateway → RabbitMQ → users → Postgres", medianOf(bus)));
  console.log(row("fastify in-process → Postgres", medianOf(inProcess)));
  console.log(
    `\nratio (through the bus / in-process, median of the rounds' ratios): throughput ${median(ratios).toFixed(2)}× ` +
      `(rounds: ${ratios.map((r) => r.toFixed(2)).join(", ")}); p99 through the bus ${medianOf(bus).p99} ms`,
  );
} finally {
  await processes.stopAll();
  await Promise.all([db.dispose(), vhost.dispose()]);
}
