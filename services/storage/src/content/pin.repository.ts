import type { MessageContext, TraceContext } from "@fundraise/bus";
import { enqueue } from "@fundraise/outbox";
import type { EventDescriptor, PayloadOf } from "@fundraise/protocol";
import { executorOf, handleOnce, inTransaction, type Logger, type Tx } from "@fundraise/service-kit";
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
  /**
   * Runs `work` once per message for `consumer` (service-kit's handleOnce: the claim in
   * `processed_message`), in one transaction with the claim: false when the message was handled before.
   */
  once(
    consumer: string,
    ctx: Pick<MessageContext, "messageId" | "log" | "markDuplicate">,
    work: (tx: PinTx) => Promise<void>,
  ): Promise<boolean>;
  /** Which of these contents have a live row. */
  liveAmong(fileHashes: string[]): Promise<Set<string>>;
  /**
   * Live rows with an id above `afterId`, by id, at most `limit`; with `recordedBefore`, only those
   * recorded before it.
   */
  live(afterId: number, limit: number, recordedBefore?: Date): Promise<Pin[]>;
  /**
   * Runs `work` while holding the session advisory lock `name` on a connection of its own, or answers
   * `{ ran: false }` at once when another process holds it. A process that dies drops the lock with its
   * connection.
   */
  exclusively<T>(name: string, work: () => Promise<T>): Promise<Exclusive<T>>;
}

export interface PinTx {
  /** The live row of this content, locked until the transaction ends; null when it has none. */
  lockLive(fileHash: string): Promise<Pin | null>;
  /** A new live row, recorded `at`. */
  create(row: NewPinRow, at: Date): Pin;
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
    create: (row, at) =>
      t.create(Pin, { ...row, pinnedAt: at, lastUploadedAt: at, unpinnedAt: null, unpinReason: null }),
    save: () => t.flush(),
    async emit(event, payload, ctx) {
      await enqueue(executor, event, payload, { schema: STORAGE_SCHEMA, context: ctx });
    },
  });
  return {
    transaction: (work) => inTransaction(em(), (tx) => work(txOf(tx))),
    once: (consumer, ctx, work) =>
      handleOnce(em(), { schema: STORAGE_SCHEMA, consumer }, ctx, (t) =>
        work(txOf({ em: t, sql: executorOf(t) })),
      ),
    async liveAmong(fileHashes) {
      if (fileHashes.length === 0) return new Set();
      const rows = await em().find(
        Pin,
        { fileHash: { $in: fileHashes }, unpinnedAt: null },
        { fields: ["fileHash"] },
      );
      return new Set(rows.map((row) => row.fileHash));
    },
    live: (afterId, limit, recordedBefore) =>
      em().find(
        Pin,
        {
          unpinnedAt: null,
          id: { $gt: afterId },
          ...(recordedBefore ? { pinnedAt: { $lt: recordedBefore } } : {}),
        },
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
