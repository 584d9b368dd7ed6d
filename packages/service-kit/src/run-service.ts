import { type AmqpBus, createAmqpBus } from "@fundraise/bus";
import { createLogger, type Logger } from "./logger.ts";
import type { ServiceOutbox } from "./outbox.ts";
import { createShutdown, exitOnSignals, type Shutdown } from "./shutdown.ts";

/** What `runService` needs of a service's config (every config.ts has these). */
export interface ServiceConfig {
  amqp: { url: string; prefetch: number; journal: boolean; connectTimeoutMs?: number };
  log: { level: string };
}

/** A started service, as its composition root (`app.ts`) returns it. */
export interface ServiceApp {
  /** Stops taking work that does not come over the bus (the gateway's HTTP listener). */
  closeIntake?: () => Promise<void>;
  /** The service's outbox, when it owes events. */
  outbox?: ServiceOutbox;
  /** Closes what the app opened (database, Redis, timers). */
  stop(): Promise<void>;
}

export interface ServiceSpec<C extends ServiceConfig> {
  name: string;
  loadConfig: () => C;
  start: (deps: { config: C; log: Logger; bus: AmqpBus; shutdown: Shutdown }) => Promise<ServiceApp>;
}

/**
 * The process of every service: config, logger, bus, the app, and one shutdown order on SIGINT/SIGTERM:
 * 1. stop intake (HTTP): no new requests; those under way finish, they still need the bus;
 * 2. stop consuming: no new messages; running handlers finish, their replies go out and their outbox rows
 *    commit;
 * 3. stop the outbox relay: its last pass publishes what those handlers committed;
 * 4. close the bus;
 * 5. close the app's own resources (database, Redis, timers).
 * Each step is bounded by the shutdown's grace period. A service that fails to start logs why and exits 1;
 * one that started tells a parent process with an IPC channel `{ type: "ready", service }`.
 */
export async function runService<C extends ServiceConfig>(spec: ServiceSpec<C>): Promise<void> {
  const config = spec.loadConfig();
  const log = createLogger({ service: spec.name, level: config.log.level });
  const shutdown = createShutdown(log);
  exitOnSignals(shutdown, log);
  let bus: AmqpBus | undefined;
  try {
    bus = await createAmqpBus({
      url: config.amqp.url,
      service: spec.name,
      logger: log,
      prefetch: config.amqp.prefetch,
      journal: config.amqp.journal,
      ...(config.amqp.connectTimeoutMs === undefined
        ? {}
        : { connectTimeoutMs: config.amqp.connectTimeoutMs }),
    });
    const started = bus;
    const app = await spec.start({ config, log, bus: started, shutdown });
    // Steps run last-added first.
    shutdown.add("app", () => app.stop());
    shutdown.add("bus", () => started.close());
    if (app.outbox) shutdown.add("outbox relay", () => app.outbox?.stop());
    shutdown.add("consumers", () => started.stopConsuming());
    if (app.closeIntake) shutdown.add("intake", () => app.closeIntake?.());
    // A parent that started this process with an IPC channel (`pnpm start`) learns that it serves now.
    process.send?.({ type: "ready", service: spec.name });
  } catch (err) {
    log.fatal({ err }, `${spec.name} failed to start`);
    await bus?.close().catch(() => undefined);
    process.exit(1);
  }
}
