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
 * `--tracing` adds a third side: another gateway and users pair (a vhost of its own) with tracing on,
 * exporting over OTLP/HTTP (`--otlp-protocol`, http/protobuf by default) to a sink in this process that
 * counts the spans; it prints its req/s and its ratio to the bus side without tracing, and the spans
 * received per request (docs/adr/0031-tracing.md).
 *
 *   pnpm bench [-- --connections 64 --duration 10 --rounds 3 --tracing]
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { createTestVhost } from "@fundraise/bus/testing";
import { createTestDatabase } from "@fundraise/service-kit/testing";
import autocannon from "autocannon";
import { freePort } from "../scripts/lib/processes.ts";
import { type OtlpSink, startOtlpSink } from "./lib/otlp-sink.ts";
import { benchProcesses, ready } from "./lib/services.ts";
import { median } from "./lib/stats.ts";

const { values } = parseArgs({
  // `pnpm bench -- --x` passes the `--` through.
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    connections: { type: "string", default: "64" },
    duration: { type: "string", default: "10" },
    rounds: { type: "string", default: "3" },
    tracing: { type: "boolean", default: false },
    "otlp-protocol": { type: "string", default: "http/protobuf" },
  },
});
const tracing = values.tracing;
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

/** Requests sent to each URL, warm-up included (spans per traced request). */
const sent = new Map<string, number>();

async function load(url: string, seconds = duration): Promise<Figures> {
  const result = await autocannon({ url, connections, duration: seconds });
  sent.set(url, (sent.get(url) ?? 0) + result.requests.total);
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${url}: ${result.non2xx} non-2xx answers and ${result.errors} errors`);
  }
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

const [db, vhost, tracedVhost] = await Promise.all([
  createTestDatabase("bench"),
  createTestVhost("bench"),
  tracing ? createTestVhost("bench-traced") : undefined,
]);
let sink: OtlpSink | undefined;
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
  // The traced pair: its own vhost (its users instance must not answer the other gateway's calls).
  let traced: string | undefined;
  if (tracedVhost) {
    sink = await startOtlpSink();
    const tracedPort = await freePort();
    const otel = {
      DATABASE_URL: db.url,
      AMQP_URL: tracedVhost.url,
      OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: values["otlp-protocol"],
    };
    processes.service("users", otel);
    processes.service("gateway", {
      ...otel,
      PORT: String(tracedPort),
      REDIS_PREFIX: `bench:${randomBytes(4).toString("hex")}:`,
      RATE_LIMIT_PER_MINUTE: "100000000",
    });
    traced = `http://127.0.0.1:${tracedPort}/user/learnusercount`;
  }
  await Promise.all([ready(viaBus), ready(direct), ...(traced ? [ready(traced)] : [])]);

  // Warm-up: JIT, connection pools and broker channels settle before anything is measured.
  for (const url of [viaBus, direct, ...(traced ? [traced] : [])]) await load(url, 5);
  const bus: Figures[] = [];
  const inProcess: Figures[] = [];
  const withTracing: Figures[] = [];
  // Each round starts with another side: a drifting machine favours no side.
  const sides: [string, Figures[]][] = [
    [viaBus, bus],
    [direct, inProcess],
    ...(traced ? [[traced, withTracing] as [string, Figures[]]] : []),
  ];
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < sides.length; i++) {
      const [url, figures] = sides[(round + i) % sides.length] as [string, Figures[]];
      figures.push(await load(url));
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
    const t = withTracing[round];
    if (t) {
      console.log(row(`round ${round + 1}: the same with tracing on`, t));
      console.log(`round ${round + 1}: tracing on / off ${(t.rps / a.rps).toFixed(2)}×`);
    }
  }
  const medianOf = (side: Figures[]): Figures => ({
    rps: median(side.map((f) => f.rps)),
    p50: median(side.map((f) => f.p50)),
    p99: median(side.map((f) => f.p99)),
  });
  console.log("\nmedians of the rounds");
  console.log(row("gateway → RabbitMQ → users → Postgres", medianOf(bus)));
  console.log(row("fastify in-process → Postgres", medianOf(inProcess)));
  if (traced) console.log(row("gateway → … → Postgres, tracing on", medianOf(withTracing)));
  console.log(
    `\nratio (through the bus / in-process, median of the rounds' ratios): throughput ${median(ratios).toFixed(2)}× ` +
      `(rounds: ${ratios.map((r) => r.toFixed(2)).join(", ")}); p99 through the bus ${medianOf(bus).p99} ms`,
  );
  if (traced && sink) {
    const onOff = withTracing.map((t, round) => t.rps / (bus[round] as Figures).rps);
    console.log(
      `tracing on / off (median of the rounds' ratios, ${values["otlp-protocol"]}): throughput ` +
        `${median(onOff).toFixed(2)}× (rounds: ${onOff.map((r) => r.toFixed(2)).join(", ")}); ` +
        `p99 ${medianOf(withTracing).p99} ms against ${medianOf(bus).p99} ms`,
    );
    // The services export what they still hold when they stop.
    await processes.stopAll();
    const requests = sent.get(traced) ?? 0;
    console.log(
      `spans received: ${sink.spans()} for ${requests} traced requests (warm-up included), ` +
        `${(sink.spans() / Math.max(1, requests)).toFixed(2)} a request`,
    );
  }
} finally {
  await processes.stopAll();
  await sink?.close();
  await Promise.all([db.dispose(), vhost.dispose(), tracedVhost?.dispose()]);
}
