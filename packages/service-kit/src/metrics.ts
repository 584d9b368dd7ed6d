import type { BusMetrics, QueueReport } from "@fundraise/bus";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** Seconds; RPCs are milliseconds on a good day and bounded by their deadlines (seconds). */
const RPC_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** How long one scrape waits for a source that asks the broker or the database (they may be down). */
export const SCRAPE_SOURCE_TIMEOUT_MS = 2_000;

/** An outbox's unpublished events, as one scrape reads them. */
export interface OutboxBacklog {
  /** The service's schema, whose `outbox` table it is. */
  schema: string;
  events: number;
  /** Age of the oldest unpublished event; 0 when there is none. */
  oldestAgeSeconds: number;
}

/** What a scrape asks at scrape time: each may be absent (not started yet, no outbox). */
export interface ScrapeSources {
  service?: string;
  connected?: () => boolean;
  queues?: (timeoutMs: number) => Promise<QueueReport>;
  outbox?: () => Promise<OutboxBacklog>;
  /** The service's own Prometheus text (ServiceApp.metrics), appended as it is. */
  text?: () => string | undefined;
}

/**
 * The metrics of one process: one prom-client registry with Node's own metrics, RPC latency histograms on
 * both sides of the bus, database and Redis error counters, and gauges read at scrape time (queue depth and
 * consumers, dead letters, outbox backlog). Label values come from closed sets only: RPC names, error
 * kinds, the process's own queue names.
 */
export interface ProcessMetrics {
  readonly registry: Registry;
  /** For `createAmqpBus({ metrics })`. */
  readonly bus: BusMetrics;
  /** Database failures: `connection` (unreachable, lost, exhausted) or `contention` (deadlock, serialization). */
  dbError(kind: "connection" | "contention"): void;
  /** Counts a Redis client's `error` events (a connection refused, reset or timed out). */
  observeRedis(client: { on(event: "error", listener: (error: unknown) => void): unknown }): void;
  /** What the next scrapes read; later calls add to (and override) earlier ones. */
  setSources(sources: ScrapeSources): void;
  /** The Prometheus text of the process; never waits more than about SCRAPE_SOURCE_TIMEOUT_MS. */
  scrape(): Promise<string>;
  readonly contentType: string;
}

let current: ProcessMetrics | undefined;

/** The process's metrics, made on first use. */
export function processMetrics(): ProcessMetrics {
  current ??= createProcessMetrics();
  return current;
}

export function createProcessMetrics(options: { sourceTimeoutMs?: number } = {}): ProcessMetrics {
  const timeoutMs = options.sourceTimeoutMs ?? SCRAPE_SOURCE_TIMEOUT_MS;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const rpcClient = new Histogram({
    name: "rpc_client_duration_seconds",
    help: "RPC calls this process made over the bus, by RPC name and outcome (ok or the error kind).",
    labelNames: ["route", "outcome"] as const,
    buckets: RPC_BUCKETS,
    registers,
  });
  const rpcServer = new Histogram({
    name: "rpc_server_duration_seconds",
    help: "RPC requests this process's handlers answered, by RPC name and outcome (ok or the error kind).",
    labelNames: ["route", "outcome"] as const,
    buckets: RPC_BUCKETS,
    registers,
  });
  const dbErrors = new Counter({
    name: "db_errors_total",
    help: "Database failures met: connection (unreachable, lost, exhausted) or contention.",
    labelNames: ["kind"] as const,
    registers,
  });
  const redisErrors = new Counter({
    name: "redis_errors_total",
    help: "Errors of this process's Redis connections.",
    registers,
  });
  // Present at 0 from the start: a rate over a counter that appears late misses its first increase.
  dbErrors.inc({ kind: "connection" }, 0);
  dbErrors.inc({ kind: "contention" }, 0);
  const serviceInfo = new Gauge({
    name: "service_info",
    help: "The service this process runs.",
    labelNames: ["service"] as const,
    registers,
  });
  new Gauge({
    name: "process_uptime_seconds",
    help: "Seconds since the process started.",
    registers,
    collect() {
      this.set(Math.round(process.uptime()));
    },
  });
  const connected = new Gauge({
    name: "bus_connected",
    help: "1 while connected to the message broker.",
    registers,
  });
  const queueMessages = new Gauge({
    name: "bus_queue_messages",
    help: "Messages ready in a queue this process consumes (RPC queue or event subscription).",
    labelNames: ["queue"] as const,
    registers,
  });
  const queueConsumers = new Gauge({
    name: "bus_queue_consumers",
    help: "Consumers of a queue this process consumes, over every instance.",
    labelNames: ["queue"] as const,
    registers,
  });
  const deadLetters = new Gauge({
    name: "bus_dead_letter_messages",
    help: "Messages in the dead-letter queue of a subscription this process consumes.",
    labelNames: ["queue"] as const,
    registers,
  });
  const outboxEvents = new Gauge({
    name: "outbox_backlog_events",
    help: "Events committed to the outbox and not yet published.",
    labelNames: ["schema"] as const,
    registers,
  });
  const outboxAge = new Gauge({
    name: "outbox_oldest_age_seconds",
    help: "Age of the oldest unpublished outbox event (0: none).",
    labelNames: ["schema"] as const,
    registers,
  });
  const sourceUp = new Gauge({
    name: "metrics_source_up",
    help: "1 when the last scrape read the source (queues: the broker, outbox: the database) in time.",
    labelNames: ["source"] as const,
    registers,
  });

  let sources: ScrapeSources = {};
  let inFlight: Promise<string> | undefined;
  const read = async <T>(source: string, run: (() => Promise<T>) | undefined): Promise<T | undefined> => {
    if (!run) return undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      const value = await Promise.race([
        run(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`${source} did not answer in time`)), timeoutMs);
        }),
      ]);
      sourceUp.set({ source }, 1);
      return value;
    } catch {
      sourceUp.set({ source }, 0);
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  };

  const metrics: ProcessMetrics = {
    registry,
    contentType: registry.contentType,
    bus: {
      rpcClient: (route, outcome, seconds) => rpcClient.observe({ route, outcome }, seconds),
      rpcServer: (route, outcome, seconds) => rpcServer.observe({ route, outcome }, seconds),
    },
    dbError: (kind) => dbErrors.inc({ kind }),
    observeRedis(client) {
      client.on("error", () => redisErrors.inc());
    },
    setSources(next) {
      sources = { ...sources, ...next };
      if (next.service) serviceInfo.set({ service: next.service }, 1);
    },
    scrape() {
      // Scrapes at the same time share one reading: gauges reset and set by one are never read half-way.
      inFlight ??= collect().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
  };

  return metrics;

  async function collect(): Promise<string> {
    const { queues, outbox } = sources;
    connected.set(sources.connected?.() ? 1 : 0);
    const [report, backlog] = await Promise.all([
      read("queues", queues && (() => queues(timeoutMs))),
      read("outbox", outbox),
    ]);
    // What is known now: a queue the broker did not report is absent, not a stale number.
    queueMessages.reset();
    queueConsumers.reset();
    deadLetters.reset();
    for (const stat of report?.queues ?? []) {
      if (stat.messages !== null) queueMessages.set({ queue: stat.queue }, stat.messages);
      if (stat.consumers !== null) queueConsumers.set({ queue: stat.queue }, stat.consumers);
    }
    for (const stat of report?.deadLetters ?? []) {
      if (stat.messages !== null) deadLetters.set({ queue: stat.queue }, stat.messages);
    }
    outboxEvents.reset();
    outboxAge.reset();
    if (backlog) {
      outboxEvents.set({ schema: backlog.schema }, backlog.events);
      outboxAge.set({ schema: backlog.schema }, backlog.oldestAgeSeconds);
    }
    const text = await registry.metrics();
    const own = sources.text?.()?.trimEnd();
    return own ? `${text.trimEnd()}\n${own}\n` : text;
  }
}

/** The SQL of an outbox's backlog (its partial index on unpublished rows keeps it cheap). */
export function outboxBacklogSql(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`Invalid schema name "${schema}".`);
  return `SELECT count(*)::int AS events,
  coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS age
FROM ${schema}.outbox WHERE published_at IS NULL`;
}
