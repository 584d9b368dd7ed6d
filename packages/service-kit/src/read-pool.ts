import pg from "pg";
import { translateDbError } from "./db-errors.ts";

/**
 * Plain `pg` connections for the hot reads of a service (one statement, committed rows, no unit of
 * work): a sign-in's account lookup, a count. MikroORM's `findOne` costs about half a millisecond of CPU
 * per call in metadata, query building and hydration, more than the query itself; here a read is the
 * query and its rows. Writes and anything that must commit with an event stay on the ORM's transaction.
 */
export interface ReadPool {
  /** Rows of one statement with `$n` parameters; a lost database is `unavailable` (DB_UNAVAILABLE). */
  query<R extends Record<string, unknown>>(text: string, params?: unknown[]): Promise<R[]>;
  close(): Promise<void>;
}

export function createReadPool(url: string, options: { max?: number } = {}): ReadPool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 5_000,
  });
  // An idle client whose server went away: the next query gets a fresh one; nothing to crash for.
  pool.on("error", () => {});
  return {
    async query<R extends Record<string, unknown>>(text: string, params: unknown[] = []) {
      try {
        return (await pool.query<R>(text, params)).rows;
      } catch (error) {
        throw translateDbError(error);
      }
    },
    close: () => pool.end(),
  };
}
