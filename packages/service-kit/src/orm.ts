import { type AnyEntity, type EntitySchema, MikroORM, type Options } from "@mikro-orm/core";
import { type Migration, Migrator } from "@mikro-orm/migrations";
import { PostgreSqlDriver } from "@mikro-orm/postgresql";
import pg from "pg";
import type { Logger } from "pino";

export type Orm = MikroORM<PostgreSqlDriver>;

export interface OrmSetup {
  url: string;
  /** The owning service's schema: a service reads and writes only its own. */
  schema: string;
  entities: EntitySchema<AnyEntity>[] | unknown[];
  /** Committed migrations, in order; applied at start-up. */
  migrations: { name: string; class: new (...args: never[]) => Migration }[];
  log: Logger;
  poolMax?: number;
}

/**
 * Opens the service's ORM on its own schema and applies its committed migrations, so a fresh database
 * and an old one both end up at the current schema before the service answers anything.
 */
export async function createOrm(setup: OrmSetup): Promise<Orm> {
  const options: Partial<Options<PostgreSqlDriver>> = {
    driver: PostgreSqlDriver,
    clientUrl: setup.url,
    schema: setup.schema,
    entities: setup.entities as Options["entities"],
    extensions: [Migrator],
    pool: { min: 0, max: setup.poolMax ?? 10 },
    debug: false,
    allowGlobalContext: false,
    migrations: {
      migrationsList: setup.migrations as never,
      tableName: "mikro_orm_migrations",
      schema: setup.schema,
      transactional: true,
      allOrNothing: true,
      snapshot: false,
    },
    logger: (message) => setup.log.debug({ orm: message }, "orm"),
  };
  const started = performance.now();
  const orm = await MikroORM.init<PostgreSqlDriver>(options);
  // Start-up time, step by step (`pnpm bench:startup -- --trace`).
  setup.log.debug({ ms: Math.round(performance.now() - started) }, "orm initialised (entities discovered)");
  try {
    const migrating = performance.now();
    await migrateExclusively(orm, setup);
    setup.log.debug({ ms: Math.round(performance.now() - migrating) }, "migrations checked");
  } catch (error) {
    await orm.close();
    throw error;
  }
  return orm;
}

/**
 * Instances of a scaled service start together; an advisory lock per schema, held on a connection of
 * its own for the whole run, lets exactly one migrate while the others wait and then find nothing to
 * apply. If the process dies, Postgres drops the connection and with it the lock.
 */
async function migrateExclusively(orm: Orm, setup: OrmSetup): Promise<void> {
  const lock = new pg.Client({ connectionString: setup.url });
  await lock.connect();
  try {
    await lock.query("select pg_advisory_lock(hashtext($1))", [`migrate:${setup.schema}`]);
    await lock.query(`create schema if not exists "${setup.schema.replaceAll('"', '""')}"`);
    const applied = await orm.migrator.up();
    if (applied.length > 0) setup.log.info({ migrations: applied.map((m) => m.name) }, "migrations applied");
  } finally {
    await lock.end();
  }
}
