import type { KeptAnswer, KeyClaim, RpcAnswers } from "@fundraise/bus";
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

/**
 * DDL that lets a row of `rpcAnswerDdl`'s table be a claim: a run under way holds the key (no envelope yet)
 * until `claimed_until`. Include it in a migration after that table's.
 */
export function rpcAnswerClaimDdl(schema = "public"): string {
  const s = checkSchema(schema);
  return `ALTER TABLE ${s}.rpc_answer ALTER COLUMN envelope DROP NOT NULL;
ALTER TABLE ${s}.rpc_answer ADD COLUMN IF NOT EXISTS claimed_until timestamptz;
`;
}

/** Undoes `rpcAnswerClaimDdl` (a migration's `down`): the claims under way are dropped with it. */
export function rpcAnswerClaimUndoDdl(schema = "public"): string {
  const s = checkSchema(schema);
  return `DELETE FROM ${s}.rpc_answer WHERE envelope IS NULL;
ALTER TABLE ${s}.rpc_answer DROP COLUMN IF EXISTS claimed_until;
ALTER TABLE ${s}.rpc_answer ALTER COLUMN envelope SET NOT NULL;
`;
}

export interface RpcAnswersOptions {
  schema?: string;
  /** How long an answer is kept (default 24 h, the gateway's own keeping of the key's answer). */
  keptMs?: number;
  /**
   * How long a run holds its key (default 120 s, past any RPC's deadline, as the gateway's claim): a run
   * that never ends (its process crashed) stops holding it then.
   */
  claimMs?: number;
  /** How often `keep` also deletes answers past `keptMs` (default 10 min), PRUNE_BATCH rows at a time. */
  pruneEveryMs?: number;
  logger?: Logger;
}

/** Rows one pruning statement deletes at most: it never holds the table long; a full batch prunes again. */
const PRUNE_BATCH = 1_000;

/**
 * The answers to keyed RPCs of a service, in `<schema>.rpc_answer` (`rpcAnswerDdl`, `rpcAnswerClaimDdl`),
 * for `bus.keepAnswers`. A row is a claim (a run under way, no envelope) or an answer. Each statement
 * stands alone (`executor` is a pool): an answer is kept after its write committed, so a crash between the
 * two loses the answer, not the write: the claim lapses, and the retry meets the write as without a key.
 */
export function createRpcAnswers(
  executor: SqlExecutor,
  options: RpcAnswersOptions = {},
): RpcAnswers & {
  /** The answer kept under a key, or the fingerprint of the run that holds it (`held`); null: neither. */
  find(key: string): Promise<KeptAnswer | { held: string } | null>;
  prune(): Promise<number>;
} {
  const schema = checkSchema(options.schema ?? "public");
  const keptMs = options.keptMs ?? 24 * 3_600_000;
  const claimMs = options.claimMs ?? 120_000;
  const pruneEveryMs = options.pruneEveryMs ?? 600_000;
  const log = (options.logger ?? pino({ level: "silent" })).child({ component: "rpc-answers", schema });
  let lastPrune = 0;

  /** An SQL interval of the milliseconds in a statement parameter (`param`: "$2"). */
  const interval = (param: string) => `make_interval(secs => ${param}::double precision / 1000)`;

  async function prune(): Promise<number> {
    const { rows } = await executor.query<{ n: number }>(
      `WITH gone AS (DELETE FROM ${schema}.rpc_answer WHERE key IN (
         SELECT key FROM ${schema}.rpc_answer
         WHERE created_at < now() - ${interval("$1")} LIMIT $2)
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

  /** The answer kept under `key`, or the fingerprint of the run that holds it; null when neither. */
  async function find(key: string): Promise<KeptAnswer | { held: string } | null> {
    const { rows } = await executor.query<{ fingerprint: string; envelope: Envelope<unknown> | null }>(
      `SELECT fingerprint, envelope FROM ${schema}.rpc_answer
       WHERE key = $1 AND (envelope IS NOT NULL AND created_at >= now() - ${interval("$2")}
         OR envelope IS NULL AND claimed_until > now())`,
      [key, keptMs],
    );
    const row = rows[0];
    if (!row) return null;
    return row.envelope === null
      ? { held: row.fingerprint }
      : { fingerprint: row.fingerprint, envelope: row.envelope };
  }

  return {
    async claim(key: string, fingerprint: string): Promise<KeyClaim> {
      // A row that is neither a live claim nor an answer within keptMs gives way to the new claim.
      for (let attempt = 0; attempt < 3; attempt++) {
        const { rows } = await executor.query(
          `INSERT INTO ${schema}.rpc_answer AS r (key, fingerprint, envelope, claimed_until)
           VALUES ($1, $2, NULL, now() + ${interval("$3")})
           ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, envelope = NULL,
             claimed_until = excluded.claimed_until, created_at = now()
           WHERE r.envelope IS NULL AND r.claimed_until <= now()
             OR r.envelope IS NOT NULL AND r.created_at < now() - ${interval("$4")}
           RETURNING 1`,
          [key, fingerprint, claimMs, keptMs],
        );
        if (rows.length > 0) return { kind: "claimed" };
        const found = await find(key);
        if (found && "held" in found) return { kind: "held", fingerprint: found.held };
        if (found) return { kind: "kept", answer: found };
        // Released or lapsed between the two statements: claim again.
      }
      return { kind: "held", fingerprint };
    },
    async keep(key: string, fingerprint: string, envelope: Envelope<unknown>): Promise<void> {
      // This run's claim becomes the answer; without one (it lapsed), the first answer stays, and one past
      // keptMs that pruning has not reached yet gives way.
      await executor.query(
        `INSERT INTO ${schema}.rpc_answer AS kept (key, fingerprint, envelope) VALUES ($1, $2, $3)
         ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, envelope = excluded.envelope,
           claimed_until = NULL, created_at = now()
         WHERE kept.envelope IS NULL OR kept.created_at < now() - ${interval("$4")}`,
        [key, fingerprint, JSON.stringify(envelope), keptMs],
      );
      pruneWhenDue();
    },
    async release(key: string): Promise<void> {
      await executor.query(`DELETE FROM ${schema}.rpc_answer WHERE key = $1 AND envelope IS NULL`, [key]);
    },
    find,
    prune,
  };
}
