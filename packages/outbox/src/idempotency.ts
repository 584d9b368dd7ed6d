import { checkSchema, type SqlExecutor } from "./sql.ts";

/** DDL of the table that remembers handled messages; include it in the service's migrations. */
export function processedMessageDdl(schema = "public"): string {
  const s = checkSchema(schema);
  return `CREATE TABLE IF NOT EXISTS ${s}.processed_message (
  consumer text NOT NULL,
  message_key text NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, message_key)
);
CREATE INDEX IF NOT EXISTS processed_message_processed_at_idx ON ${s}.processed_message (processed_at);
`;
}

export const PROCESSED_MESSAGE_DDL = processedMessageDdl();

export interface MessageKey {
  /** Who processes: usually the subscription's consumer name. */
  consumer: string;
  /** What identifies the message: `ctx.messageId`, or a business key when producers may differ. */
  messageKey: string;
}

export type ProcessOnceResult<T> = { duplicate: false; result: T } | { duplicate: true };

/**
 * Records `key` as processed and returns true, or returns false if it already was. Call it inside the
 * transaction that applies the message's effects: a rollback forgets the claim along with the effects, and
 * a concurrent duplicate waits on the row lock, then sees the committed claim.
 */
export async function claimMessage(
  executor: SqlExecutor,
  key: MessageKey,
  schema = "public",
): Promise<boolean> {
  const { rows } = await executor.query(
    `INSERT INTO ${checkSchema(schema)}.processed_message (consumer, message_key) VALUES ($1, $2)
     ON CONFLICT (consumer, message_key) DO NOTHING RETURNING 1 AS claimed`,
    [key.consumer, key.messageKey],
  );
  return rows.length === 1;
}

/**
 * Runs `work` unless `key` was processed before, in the caller's transaction (`executor` must be the
 * transaction's connection). At-least-once delivery plus this is effectively-once handling.
 *
 *   await withTransaction(pool, async (tx) => {
 *     await processOnce(tx, { consumer: "projects", messageKey: ctx.messageId }, () => apply(tx, payload));
 *   });
 */
export async function processOnce<T>(
  executor: SqlExecutor,
  key: MessageKey,
  work: () => Promise<T>,
  options: { schema?: string } = {},
): Promise<ProcessOnceResult<T>> {
  if (!(await claimMessage(executor, key, options.schema))) return { duplicate: true };
  return { duplicate: false, result: await work() };
}

/** Forgets claims older than `olderThanMs` (past any redelivery or replay window); returns how many. */
export async function pruneProcessedMessages(
  executor: SqlExecutor,
  olderThanMs: number,
  schema = "public",
): Promise<number> {
  const { rows } = await executor.query(
    `WITH gone AS (DELETE FROM ${checkSchema(schema)}.processed_message
       WHERE processed_at < now() - make_interval(secs => $1::double precision / 1000) RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [olderThanMs],
  );
  return Number(rows[0]?.n ?? 0);
}
