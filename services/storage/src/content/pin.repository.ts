import { enqueue, type TraceContext } from "@fundraise/bus";
import type { EventDescriptor, PayloadOf } from "@fundraise/protocol";
import { inTransaction, type Tx } from "@fundraise/service-kit";
import { LockMode } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import { Pin } from "./pin.entity.ts";

/** The database schema this service owns; the outbox and processed_message tables live in it too. */
export const STORAGE_SCHEMA = "storage";

export type NewPinRow = Pick<Pin, "cid" | "fileHash" | "reason" | "fileBytes" | "imageBytes">;

/** The pin inventory's data access: every query and lock, no rules. */
export interface PinRepository {
  transaction<T>(work: (tx: PinTx) => Promise<T>): Promise<T>;
  /** The live (pinned) row of this content, if any. */
  findLive(fileHash: string): Promise<Pin | null>;
  /** Every row of this content, newest first. */
  history(fileHash: string): Promise<Pin[]>;
}

export interface PinTx {
  lockLive(fileHash: string): Promise<Pin | null>;
  create(row: NewPinRow): Pin;
  save(): Promise<void>;
  /** Queues an event in the outbox, in this transaction: published after commit, never on rollback. */
  emit<D extends EventDescriptor>(event: D, payload: PayloadOf<D>, ctx: TraceContext): Promise<void>;
}

export function createPinRepository(em: () => EntityManager): PinRepository {
  const txOf = ({ em: t, sql: executor }: Tx): PinTx => ({
    lockLive: (fileHash) =>
      t.findOne(Pin, { fileHash, unpinnedAt: null }, { lockMode: LockMode.PESSIMISTIC_WRITE }),
    create: (row) => t.create(Pin, { ...row, unpinnedAt: null, unpinReason: null }),
    save: () => t.flush(),
    async emit(event, payload, ctx) {
      await enqueue(executor, event, payload, { schema: STORAGE_SCHEMA, context: ctx });
    },
  });
  return {
    transaction: (work) => inTransaction(em(), (tx) => work(txOf(tx))),
    findLive: (fileHash) => em().findOne(Pin, { fileHash, unpinnedAt: null }),
    history: (fileHash) => em().find(Pin, { fileHash }, { orderBy: { id: "desc" } }),
  };
}
