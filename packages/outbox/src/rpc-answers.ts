import type { KeptAnswer, RpcAnswers } from "@fundraise/bus";
import type { Envelope } from "@fundraise/protocol";
import pino, { type Logger } from "pino";
import { checkSchema, type SqlExecutor } from "./sql.ts";

/**
 * DDL of the table that keeps the answers to keyed RPCs (a write's Idempotency-Key, @fundraise/bus
 * `RpcAnswers`); include it in the service's migrations. `json`, not `jsonb`: an answer comes back as it
 * was sent, its keys in their order.
 */
export function rpcAnswerDdl(schema = "public"): string {
  const s = checkSchema(schema);
  return `CREATE TABLE IF NOT EXISTS ${s}.rpc_answer (
  key text PRIMARY KEY,
  fingerprint text NOT NULL,
  envelope json NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS rpc_answer_created_at_idx ON ${s}.rpc_answer (created_at);
`;
}

export interface RpcAnswersOptions {
  schema?: string;
  /** How long an answer is kept (default 24 h, the gateway's own keeping of the key's answer). */
  keptMs?: number;
  /** How often `keep` also deletes answers past `keptMs` (default 10 min), PRUNE_BATCH rows at a time. */
  pruneEveryMs?: number;
  logger?: Logger;
}

/** Rows one pruning statement deletes at most: it never holds the table long; a full batch prunes again. */
const PRUNE_BATCH = 1_000;

/**
 * The answers to keyed RPCs of a service, in `<schema>.rpc_answer` (`rpcAnswerDdl`), for `bus.keepAnswers`.
 * Each statement stands alone (`executor` is a pool): an answer is kept after its write committed, so a
 * crash between the two loses the answer, not the write, and the retry meets the write as without a key.
 */
export function createRpcAnswers(
  executor: SqlExecutor,
  options: RpcAnswersOptions = {},
): RpcAnswers & { prune(): Promise<number> } {
  const schema = checkSchema(options.schema ?? "public");
  const keptMs = options.keptMs ?? 24 * 3_600_000;
  const pruneEveryMs = options.pruneEveryMs ?? 600_000;
  const log = (options.logger ?? pino({ level: "silent" })).child({ component: "rpc-answers", schema });
  let lastPrune = 0;

  async function prune(): Promise<number> {
    const { rows } = await executor.query<{ n: number }>(
      `WITH gone AS (DELETE FROM ${schema}.rpc_answer WHERE key IN (
         SELECT key FROM ${schema}.rpc_answer
         WHERE created_at < now() - make_interval(secs => $1::double precision / 1000) LIMIT $2)
       RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
      [keptMs, PRUNE_BATCH],
    );
    const n = Number(rows[0]?.n ?? 0);
    // More are waiting: the next answer kept prunes again rather than in pruneEveryMs.
    if (n === PRUNE_BATCH) lastPrune = 0;
    return n;
  }

  function pruneWhenDue(): void {
    if (Date.now() - lastPrune < pruneEveryMs) return;
    lastPrune = Date.now();
    prune().then(
      (n) => n > 0 && log.info({ pruned: n }, "old RPC answers pruned"),
      (err: unknown) => log.warn({ err }, "pruning RPC answers failed; it runs again later"),
    );
  }

  return {
    async find(key: string): Promise<KeptAnswer | null> {
      const { rows } = await executor.query<{ fingerprint: string; envelope: Envelope<unknown> }>(
        `SELECT fingerprint, envelope FROM ${schema}.rpc_answer
         WHERE key = $1 AND created_at >= now() - make_interval(secs => $2::double precision / 1000)`,
        [key, keptMs],
      );
      return rows[0] ?? null;
    },
    async keep(key: string, fingerprint: string, envelope: Envelope<unknown>): Promise<void> {
      // The first answer stays; one past keptMs that pruning has not reached yet gives way.
      await executor.query(
        `INSERT INTO ${schema}.rpc_answer AS kept (key, fingerprint, envelope) VALUES ($1, $2, $3)
         ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, envelope = excluded.envelope,
           created_at = now()
         WHERE kept.created_at < now() - make_interval(secs => $4::double precision / 1000)`,
        [key, fingerprint, JSON.stringify(envelope), keptMs],
      );
      pruneWhenDue();
    },
    prune,
  };
}
