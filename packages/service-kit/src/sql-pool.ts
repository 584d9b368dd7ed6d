import type { SqlPool } from "@fundraise/outbox";
import { ErrorCode, errors } from "@fundraise/protocol";
import pg from "pg";
import { translateDbError } from "./db-errors.ts";
import { processMetrics } from "./metrics.ts";

/**
 * Plain `pg` connections for statements that stand alone (autocommit, no unit of work) on a hot path:
 * a sign-in's account lookup, a count, the session upsert of a sign-in. MikroORM's `findOne` costs about
 * half a millisecond of CPU per call in metadata, query building and hydration, more than the query
 * itself; here a statement is the query and its rows. Anything that must commit together with other
 * changes or with an event stays on the ORM's transaction. `query` turns a lost database into
 * `unavailable` (DB_UNAVAILABLE) and other failures as `translateDbError` does; `connect` hands out a
 * plain pg client.
 */
export function createSqlPool(url: string, options: { max?: number; queryTimeoutMs?: number } = {}): SqlPool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 5_000,
    // A server that stops answering fails the statement instead of holding the caller until its deadline.
    query_timeout: options.queryTimeoutMs ?? 10_000,
  });
  // A client whose server went away: the next query gets a fresh one; nothing to crash for.
  guardPoolClients(pool, () => processMetrics().dbError("connection"));
  return {
    async query<R extends Record<string, unknown>>(text: string, params: unknown[] = []) {
      try {
        return { rows: (await pool.query<R>(text, params)).rows };
      } catch (error) {
        // The pool's own failures to reach the server have no SQLSTATE: refused, reset, not in time, no
        // answer in time.
        if (unreachable(error)) {
          processMetrics().dbError("connection");
          throw errors.unavailable(ErrorCode.DB_UNAVAILABLE, "The database is unavailable.", {
            cause: error,
          });
        }
        throw translateDbError(error);
      }
    },
    connect: () => pool.connect(),
    end: () => pool.end(),
  };
}

/**
 * Keeps a connection the server drops (a restart, `pg_terminate_backend`) from taking the process down.
 * `pg` reports the drop as an `'error'` event, fatal without a listener: `pg-pool` listens on idle clients
 * only (re-emitting on the pool) and leaves a checked-out one to its holder, who may be between two
 * statements of a transaction (the outbox relay while it publishes). The statement in flight, or the
 * holder's next one, still fails on its own; the pool drops the broken client when it comes back.
 */
export function guardPoolClients(pool: pg.Pool, onError: (error: Error) => void): void {
  pool.on("error", onError);
  pool.on("connect", (client) => client.on("error", onError));
}

function unreachable(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (
    (typeof code === "string" && /^E(CONNREFUSED|CONNRESET|PIPE|TIMEDOUT|NOTFOUND|AI_AGAIN)$/.test(code)) ||
    (typeof message === "string" &&
      /timeout exceeded when trying to connect|Query read timeout/i.test(message))
  );
}
