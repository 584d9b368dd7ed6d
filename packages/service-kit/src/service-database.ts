import type { Bus } from "@fundraise/bus";
import type { SqlPool } from "@fundraise/outbox";
import { createOrm, type Orm, type OrmSetup } from "./orm.ts";
import { type ServiceOutbox, startOutbox } from "./outbox.ts";
import { createSqlPool } from "./sql-pool.ts";

/** A service's own schema: its ORM (migrated) and the outbox of the events it owes. */
export interface ServiceDatabase {
  orm: Orm;
  outbox: ServiceOutbox;
  /** Plain connections for hot statements that stand alone (sql-pool.ts). */
  pool: SqlPool;
  /** The outbox first (its last pass publishes what is committed), then the pool and the ORM. */
  stop(): Promise<void>;
}

/** Opens what every service with a database opens the same way: createOrm, startOutbox, a SqlPool. */
export async function openServiceDatabase(
  setup: OrmSetup & { bus: Pick<Bus, "publish"> },
): Promise<ServiceDatabase> {
  const { bus, ...ormSetup } = setup;
  const orm = await createOrm(ormSetup);
  const outbox = startOutbox({ url: setup.url, schema: setup.schema, bus, log: setup.log });
  const pool = createSqlPool(setup.url);
  return {
    orm,
    outbox,
    pool,
    async stop() {
      await outbox.stop();
      await pool.end();
      await orm.close();
    },
  };
}
