import type { TraceContext } from "@fundraise/bus";
import { enqueue } from "@fundraise/outbox";
import type { EventDescriptor, PayloadOf } from "@fundraise/protocol";
import { inTransaction, type Logger, type Tx } from "@fundraise/service-kit";
import { LockMode } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import pg from "pg";
import { Pin } from "./pin.entity.ts";

/** The database schema this service owns; the outbox and processed_message tables live in it too. */
export const STORAGE_SCHEMA = "storage";

export type NewPinRow = Pick<Pin, "cid" | "fileHash" | "reason" | "fileBytes" | "imageBytes">;

/** What `exclusively` answers: the work's value, or that another holder had the lock. */
export type Exclusive<T> = { ran: true; value: T } | { ran: false };

/** The pin inventory's data access: every query and lock, no rules. */
export interface PinRepository {
  transaction<T>(work: (tx: PinTx) => Promise<T>): Promise<T>;
  /** The live (pinned) row of this content, if any. */
  findLive(fileHash: string): Promise<Pin | null>;
  /** Every row of this content, newest first. */
  history(fileHash: string): Promise<Pin[]>;
  /** Which of these contents have a live row. */
  liveAmong(fileHashes: string[]): Promise<Set<string>>;
  /** Live rows last uploaded before `cutoff`, with an id above `afterId`, by id, at most `limit`. */
  liveUploadedBefore(cutoff: Date, afterId: number, limit: number): Promise<Pin[]>;
  /**
   * Runs `work` while holding the session advisory lock `name` on a connection of its own, or answers
   * `{ ran: false }` at once when another process holds it. A process that dies drops the lock with its
   * connection.
   */
  exclusively<T>(name: string, work: () => Promise<T>): Promise<Exclusive<T>>;
}

export interface PinTx {
  lockLive(fileHash: string): Promise<Pin | null>;
  /** Whether this content has any row, live or unpinned. */
  everRecorded(fileHash: string): Promise<boolean>;
  create(row: NewPinRow): Pin;
  save(): Promise<void>;
  /** Queues an event in the outbox, in this transaction: published after commit, never on rollback. */
  emit<D extends EventDescriptor>(event: D, payload: PayloadOf<D>, ctx: TraceContext): Promise<void>;
}

export function createPinRepository(
  em: () => EntityManager,
  options: { url: string; log: Logger },
): PinRepository {
  const txOf = ({ em: t, sql: executor }: Tx): PinTx => ({
    lockLive: (fileHash) =>
      t.findOne(Pin, { fileHash, unpinnedAt: null }, { lockMode: LockMode.PESSIMISTIC_WRITE }),
    everRecorded: async (fileHash) => (await t.count(Pin, { fileHash })) > 0,
    create: (row) => {
      // One instant for both: a later upload of the same bytes is exactly `lastUploadedAt > pinnedAt`.
      const now = new Date();
      return t.create(Pin, {
        ...row,
        pinnedAt: now,
        lastUploadedAt: now,
        unpinnedAt: null,
        unpinReason: null,
      });
    },
    save: () => t.flush(),
    async emit(event, payload, ctx) {
      await enqueue(executor, event, payload, { schema: STORAGE_SCHEMA, context: ctx });
    },
  });
  return {
    transaction: (work) => inTransaction(em(), (tx) => work(txOf(tx))),
    findLive: (fileHash) => em().findOne(Pin, { fileHash, unpinnedAt: null }),
    history: (fileHash) => em().find(Pin, { fileHash }, { orderBy: { id: "desc" } }),
    async liveAmong(fileHashes) {
      if (fileHashes.length === 0) return new Set();
      const rows = await em().find(
        Pin,
        { fileHash: { $in: fileHashes }, unpinnedAt: null },
        { fields: ["fileHash"] },
      );
      return new Set(rows.map((row) => row.fileHash));
    },
    liveUploadedBefore: (cutoff, afterId, limit) =>
      em().find(
        Pin,
        { unpinnedAt: null, lastUploadedAt: { $lt: cutoff }, id: { $gt: afterId } },
        { orderBy: { id: "asc" }, limit },
      ),

    async exclusively(name, work) {
      const client = new pg.Client({ connectionString: options.url });
      // A lost connection drops the lock; the rules stay safe without it (every removal locks its row).
      client.on("error", (err) => options.log.warn({ err, lock: name }, "advisory lock connection lost"));
      await client.connect();
      try {
        const { rows } = await client.query<{ locked: boolean }>(
          "select pg_try_advisory_lock(hashtext($1)) as locked",
          [name],
        );
        if (!rows[0]?.locked) return { ran: false };
        try {
          return { ran: true, value: await work() };
        } finally {
          await client.query("select pg_advisory_unlock(hashtext($1))", [name]).catch(() => undefined);
        }
      } finally {
        await client.end().catch(() => undefined);
      }
    },
  };
}
