import { type AmqpBus, type Bus, createAmqpBus } from "@fundraise/bus";
import { journalWriter } from "@fundraise/journal";
import { translateDbError } from "./db-errors.ts";
import { type HealthServer, startHealthServer } from "./health-server.ts";
import { createLogger, type Logger } from "./logger.ts";
import { processMetrics } from "./metrics.ts";
import type { ServiceOutbox } from "./outbox.ts";
import { type Closers, createShutdown, exitOnSignals, type Shutdown } from "./shutdown.ts";
import { waitingFor } from "./waiting.ts";

/** What `runService` needs of a service's config (every config.ts has these). */
export interface ServiceConfig {
  amqp: {
    url: string;
    prefetch: number;
    journal: boolean;
    journalMaxAge?: string;
    journalKey?: string;
    /**
     * How long the start waits for the broker before it gives up (exit 1). Absent: as long as it takes; the
     * process says so once per burst of attempts and its readiness probe answers 503 meanwhile.
     */
    connectTimeoutMs?: number;
  };
  log: { level: string };
  /** The internal port of `/healthz`, `/readyz` and `/metrics` (HealthEnv); port 0 or absent: none. */
  health?: { port: number; host: string };
}

/**
 * A started service, as its composition root (`app.ts`) returns it. What the app opened (database, Redis,
 * timers) it registered with `shutdown.add` as it opened it: closed last, in reverse order, and also when
 * the start fails half-way.
 */
export interface ServiceApp {
  /** Stops taking work that does not come over the bus (the gateway's HTTP listener). */
  closeIntake?: () => Promise<void>;
  /** The service's outbox, when it owes events. */
  outbox?: ServiceOutbox;
  /** The service's own readiness beyond a connected bus (the indexer: lag within its bound). */
  readiness?: () => { ready: boolean; detail?: Record<string, unknown> };
  /** The service's own Prometheus lines, appended to the process's on `/metrics`. */
  metrics?: () => string;
}

export interface ServiceSpec<C extends ServiceConfig> {
  name: string;
  loadConfig: () => C;
  start: (deps: AppDeps<C, AmqpBus>) => Promise<ServiceApp>;
}

/** What a composition root gets: its config, logger and bus, and the shutdown it registers its resources with. */
export interface AppDeps<C, B extends Bus = Bus> {
  config: C;
  log: Logger;
  bus: B;
  shutdown: Closers;
}

/**
 * The process of every service: config, logger, bus, the app, and one shutdown order on SIGINT/SIGTERM:
 * 1. stop intake (HTTP): no new requests; those under way finish, they still need the bus;
 * 2. stop consuming: no new messages; running handlers finish, their replies go out and their outbox rows
 *    commit;
 * 3. stop the outbox relay: its last pass publishes what those handlers committed;
 * 4. close the bus;
 * 5. close the app's own resources (database, Redis, timers: what it registered with `shutdown.add`);
 * 6. the health endpoints.
 * Each step is bounded by the shutdown's grace period. A server that does not answer yet (the broker here,
 * the database in `openServiceDatabase`) is waited for, as long as it takes, with one log line per burst of
 * attempts and `/readyz` at 503: a service that exited instead would be restarted into the same wait, and
 * print a fatal error each time. A service that fails to start for any other reason closes its bus and what
 * its app had opened, logs why and exits 1; one that started tells a parent process with an IPC channel
 * `{ type: "ready", service }`.
 */
export async function runService<C extends ServiceConfig>(spec: ServiceSpec<C>): Promise<void> {
  const config = spec.loadConfig();
  const log = createLogger({ service: spec.name, level: config.log.level });
  const shutdown = createShutdown(log);
  exitOnSignals(shutdown, log);
  let bus: AmqpBus | undefined;
  let app: ServiceApp | undefined;
  let health: HealthServer | undefined;
  const metrics = processMetrics();
  metrics.setSources({
    service: spec.name,
    connected: () => bus?.isConnected() ?? false,
    queues: (timeoutMs) =>
      bus ? bus.inspectQueues(timeoutMs) : Promise.resolve({ queues: [], deadLetters: [] }),
    text: () => app?.metrics?.(),
  });
  try {
    if (config.health?.port) {
      // Up before the app starts: liveness answers during migrations and start-up, readiness says "starting".
      health = await startHealthServer({
        ...config.health,
        source: {
          readiness: () => readinessOf(bus, app, shutdown),
          metrics: () => metrics.scrape(),
        },
      });
      log.info({ port: health.port }, "health endpoints listening");
      const server = health;
      shutdown.add("health endpoints", () => server.close());
    }
    bus = await createAmqpBus({
      url: config.amqp.url,
      service: spec.name,
      logger: log,
      prefetch: config.amqp.prefetch,
      ...(config.amqp.journal
        ? {
            journal: journalWriter({
              ...(config.amqp.journalMaxAge === undefined ? {} : { maxAge: config.amqp.journalMaxAge }),
              ...(config.amqp.journalKey === undefined ? {} : { pseudonymKey: config.amqp.journalKey }),
            }),
          }
        : {}),
      // A database lost or out of connections is 503, wherever the handler met it (reads outside a
      // transaction too), never an unexpected 500.
      translateError: (error) => translateDbError(error),
      metrics: metrics.bus,
      connectTimeoutMs: config.amqp.connectTimeoutMs ?? Number.POSITIVE_INFINITY,
    });
    const started = bus;
    const startedApp = await spec.start({ config, log, bus: started, shutdown });
    app = startedApp;
    const backlog = startedApp.outbox?.backlog;
    if (backlog) metrics.setSources({ outbox: backlog });
    // Steps run last-added first: the app's own resources (added while it started) after the bus.
    shutdown.add("bus", () => started.close());
    if (startedApp.outbox) shutdown.add("outbox relay", () => startedApp.outbox?.stop());
    shutdown.add("consumers", () => started.stopConsuming());
    if (startedApp.closeIntake) shutdown.add("intake", () => startedApp.closeIntake?.());
    // A parent that started this process with an IPC channel (`pnpm start`) learns that it serves now.
    process.send?.({ type: "ready", service: spec.name });
  } catch (err) {
    // Stopped (SIGTERM) while it waited for a server: exitOnSignals ends the process after the shutdown.
    if (shutdown.signal.aborted) return;
    log.fatal({ err }, `${spec.name} failed to start`);
    await bus?.close().catch(() => undefined);
    await shutdown.run("failed to start");
    process.exit(1);
  }
}

function readinessOf(
  bus: AmqpBus | undefined,
  app: ServiceApp | undefined,
  shutdown: Shutdown,
): { ready: boolean; detail?: Record<string, unknown> } {
  if (shutdown.signal.aborted) return { ready: false, detail: { reason: "shutting down" } };
  // createAmqpBus returns once connected: until then the start waits for the broker.
  if (!bus) return { ready: false, detail: { reason: "waiting for the message broker" } };
  if (!app) {
    const waits = waitingFor();
    return {
      ready: false,
      detail: { reason: "starting", ...(waits.length > 0 ? { waitingFor: waits } : {}) },
    };
  }
  if (!bus?.isConnected()) return { ready: false, detail: { reason: "message broker unreachable" } };
  return app.readiness?.() ?? { ready: true };
}
