import { type AmqpBus, createAmqpBus } from "@fundraise/bus";
import { createTestVhost, type TestVhost } from "@fundraise/bus/testing";
import { journalWriter } from "@fundraise/journal";
import type { EventDescriptor } from "@fundraise/protocol";
import pg from "pg";
import { translateDbError } from "../db-errors.ts";
import { createLogger, type Logger, silentLogger } from "../logger.ts";
import { processMetrics } from "../metrics.ts";
import type { ServiceApp } from "../run-service.ts";
import { type Closers, createShutdown } from "../shutdown.ts";
import type { ReceivedEvent } from "./assertions.ts";
import { createTestDatabase, type TestDatabase } from "./database.ts";

/**
 * One service of a harness: started on its own bus with the harness's database and vhost in `env`; what it
 * opens it registers with `shutdown`, as under runService.
 */
export interface HarnessService {
  name: string;
  start(deps: {
    env: Record<string, string>;
    log: Logger;
    bus: AmqpBus;
    shutdown: Closers;
  }): Promise<ServiceApp>;
}

/**
 * Services as the gateway and the other services meet them, isolated per test file: one database (each
 * service in its own schema, as in production) and one RabbitMQ vhost, each service on its own bus, and
 * the test on a second bus (`client`) that calls the way the gateway does and records `record`'s events.
 */
export interface ServiceHarness {
  db: TestDatabase;
  vhost: TestVhost;
  client: AmqpBus;
  /** Direct SQL on the test database, for seeding and for looking at what the services wrote. */
  sql: pg.Pool;
  /** The started services, in start order, and their buses. */
  apps: ServiceApp[];
  buses: AmqpBus[];
  /** Events received by the test client, oldest first. */
  events: ReceivedEvent[];
  stop(): Promise<void>;
}

export async function startServiceHarness(spec: {
  label: string;
  /** Started in order: the ones a service calls at start-up first. */
  services: HarnessService[];
  record: Record<string, EventDescriptor>;
}): Promise<ServiceHarness> {
  const [db, vhost] = await Promise.all([createTestDatabase(spec.label), createTestVhost(spec.label)]);
  const env = { DATABASE_URL: db.url, AMQP_URL: vhost.url, LOG_LEVEL: "silent" };
  // Silent unless TEST_LOG_LEVEL asks for the services' and buses' JSON lines (debugging a failing test).
  const level = process.env.TEST_LOG_LEVEL;
  const logOf = (service: string) => (level ? createLogger({ service, level }) : silentLogger());
  // Journaled, as runService's buses are by default (BUS_JOURNAL).
  const busOf = (service: string) =>
    createAmqpBus({
      url: vhost.url,
      service,
      logger: logOf(service),
      translateError: translateDbError,
      journal: journalWriter(),
      // The test process's registry, as runService's buses report to their process's.
      metrics: processMetrics().bus,
    });
  const client = await busOf("test-client");
  const events: ReceivedEvent[] = [];
  for (const event of Object.values(spec.record)) {
    await client.subscribe("test", event, async (payload) => {
      events.push({ name: event.name, payload: payload as Record<string, unknown> });
    });
  }
  const buses: AmqpBus[] = [];
  const apps: ServiceApp[] = [];
  // One shutdown for every service's resources: the last started closes first.
  const shutdown = createShutdown(logOf("harness"));
  // As runService does: no more messages, then the buses, then each service's own resources.
  const stopServices = async () => {
    await client.close();
    for (const bus of buses.reverse()) await bus.close();
    await shutdown.run("test over");
  };
  try {
    for (const service of spec.services) {
      const bus = await busOf(service.name);
      buses.push(bus);
      apps.push(await service.start({ env, log: logOf(service.name), bus, shutdown }));
    }
  } catch (error) {
    await stopServices();
    await Promise.all([db.dispose(), vhost.dispose()]);
    throw error;
  }
  const sql = new pg.Pool({ connectionString: db.url, max: 4 });
  return {
    db,
    vhost,
    client,
    sql,
    apps,
    buses: [...buses],
    events,
    async stop() {
      await stopServices();
      await sql.end();
      await Promise.all([db.dispose(), vhost.dispose()]);
    },
  };
}
