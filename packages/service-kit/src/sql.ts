import type { TraceContext } from "@fundraise/bus";
import { type SqlExecutor, withTraceparent, withWriteContext } from "@fundraise/outbox";
import type { EntityManager } from "@mikro-orm/postgresql";
import { translateDbError } from "./db-errors.ts";
import { tracingStarted } from "./telemetry-env.ts";

/** One unit of work: the entity manager of an open transaction and a SQL executor on that same transaction. */
export interface Tx {
  em: EntityManager;
  sql: SqlExecutor;
}

/**
 * An executor for the outbox and idempotency helpers (@fundraise/outbox) (`enqueue`, `processOnce`) that runs on the
 * transaction MikroORM holds for `em`.
 *
 * Why not a `pg` Pool here: use cases change entities through MikroORM's unit of work, and the outbox row
 * and the idempotency claim must commit or roll back with exactly those changes. A client from a separate
 * pool is another connection, hence another transaction; a crash or an error between the two commits
 * would lose an event or publish one for a change that never happened. (The outbox *relay* does use a pg
 * Pool: it only reads committed rows, and needs dedicated connections for FOR UPDATE SKIP LOCKED and LISTEN.)
 *
 * MikroORM formats parameters client-side into `?` placeholders, escaping each value (bytea Buffers
 * included). The outbox helpers number their `$n` placeholders once each and in order, which this checks, so
 * renaming them to `?` is exact.
 */
export function executorOf(em: EntityManager): SqlExecutor {
  return {
    async query<R extends Record<string, unknown>>(sql: string, params: unknown[] = []) {
      let expected = 0;
      const text = sql.replace(/\$(\d+)/g, (_, n: string) => {
        if (Number(n) !== ++expected) throw new Error(`Placeholders must run $1..$n in order: ${sql}`);
        return "?";
      });
      const rows = await em.getConnection().execute<R[]>(text, params, "all", em.getTransactionContext());
      return { rows };
    },
  };
}

/**
 * Runs `work` in one database transaction (committed when it resolves, rolled back when it throws) and
 * translates database failures at this edge: a unique violation becomes the conflict `conflictOf` names
 * for the violated constraint, a lost connection `unavailable`.
 */
export async function inTransaction<T>(
  em: EntityManager,
  work: (tx: Tx) => Promise<T>,
  conflictOf?: (constraint: string | undefined) => { code: string; message: string } | undefined,
  /**
   * The request the write serves, for a schema whose triggers write outbox rows (users): the rows carry its
   * request id, journal cause and trace (one statement). Without it, the trace alone when tracing is on.
   */
  context?: TraceContext,
): Promise<T> {
  try {
    return await em.transactional(async (txEm) => {
      const sql = executorOf(txEm);
      if (context) await withWriteContext(sql, context);
      else if (tracingStarted()) await withTraceparent(sql);
      return work({ em: txEm, sql });
    });
  } catch (error) {
    const constraint = (error as { constraint?: unknown } | null)?.constraint;
    throw translateDbError(error, conflictOf?.(typeof constraint === "string" ? constraint : undefined));
  }
}
