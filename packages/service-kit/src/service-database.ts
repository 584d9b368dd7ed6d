import type { Bus } from "@fundraise/bus";
import type { SqlPool } from "@fundraise/outbox";
import { waitForDatabase } from "./database-wait.ts";
import type { Logger } from "./logger.ts";
import { outboxBacklogSql } from "./metrics.ts";
import { createOrm, type Orm, type OrmSetup } from "./orm.ts";
import { type ServiceOutbox, startOutbox } from "./outbox.ts";
import type { Closers } from "./shutdown.ts";
import { createSqlPool } from "./sql-pool.ts";

/** A service's own schema: its ORM (migrated) and the outbox of the events it owes. */
export interface ServiceDatabase {
  orm: Orm;
  outbox: ServiceOutbox;
  /** Plain connections for hot statements that stand alone (sql-pool.ts). */
  pool: SqlPool;
}

/**
 * Opens what every service with a database opens the same way: createOrm, startOutbox, a SqlPool. Closed at
 * shutdown: the outbox first (its last pass publishes what is committed), then the pool and the ORM. A
 * database that does not answer yet is waited for (`waitForDatabase`), until the shutdown.
 */
export async function openServiceDatabase(
  setup: OrmSetup & { bus: Pick<Bus, "publish">; shutdown: Closers },
): Promise<ServiceDatabase> {
  const { bus, shutdown, ...ormSetup } = setup;
  const stopWaiting = new AbortController();
  shutdown.add("database wait", () => stopWaiting.abort("shutting down"));
  await waitForDatabase(setup.url, { log: setup.log, signal: stopWaiting.signal });
  const orm = await createOrm(ormSetup);
  const outbox = startOutbox({ url: setup.url, schema: setup.schema, bus, log: setup.log });
  const pool = createSqlPool(setup.url);
  // Read at scrape time on the service's own pool: the relay's two connections stay the relay's.
  const backlogSql = outboxBacklogSql(setup.schema);
  outbox.backlog = async () => {
    const { rows } = await pool.query<{ events: number; age: number }>(backlogSql);
    return { schema: setup.schema, events: rows[0]?.events ?? 0, oldestAgeSeconds: rows[0]?.age ?? 0 };
  };
  shutdown.add("database", async () => {
    await outbox.stop();
    await pool.end();
    await orm.close();
  });
  return { orm, outbox, pool };
}

/** `openServiceDatabase` from an app's deps (`config.db.url`, log, bus, shutdown) and its own schema. */
export function openAppDatabase(
  deps: { config: { db: { url: string } }; log: Logger; bus: Pick<Bus, "publish">; shutdown: Closers },
  own: Pick<OrmSetup, "schema" | "entities" | "migrations">,
): Promise<ServiceDatabase> {
  const { config, log, bus, shutdown } = deps;
  return openServiceDatabase({ url: config.db.url, ...own, log, bus, shutdown });
}
