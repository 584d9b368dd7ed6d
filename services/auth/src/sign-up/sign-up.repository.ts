import type { TraceContext } from "@fundraise/bus";
import { claimMessage, enqueue } from "@fundraise/outbox";
import type { EventDescriptor, PayloadOf } from "@fundraise/protocol";
import { inTransaction, type Tx } from "@fundraise/service-kit";
import type { EntityManager } from "@mikro-orm/postgresql";
import { AUTH_SCHEMA } from "../db/schema.ts";
import { EmailVerification } from "./email-verification.entity.ts";

export type NewVerification = Pick<EmailVerification, "userId" | "mailAddress" | "tokenHash" | "expiresAt">;

/**
 * Sign-up's data access (`auth.email_verification`, the outbox, the handled-message claims): every query,
 * no rules. `transaction` gives the use cases a unit of work whose events commit with its rows.
 */
export interface SignUpRepository {
  transaction<T>(work: (tx: SignUpTx) => Promise<T>): Promise<T>;
  /** The verification whose token has this SHA-256, or null. */
  findByTokenHash(tokenHash: string): Promise<EmailVerification | null>;
  /** Deletes verifications that expired before `before` (used or not); answers how many. */
  pruneExpired(before: Date): Promise<number>;
}

export interface SignUpTx {
  /** The expiry of the user's newest unused verification, if any. */
  pendingExpiryOf(userId: number): Promise<Date | undefined>;
  /** Stores this verification in place of the user's unused ones (used ones stay). */
  replaceUnused(row: NewVerification): Promise<void>;
  /** Marks a verification used; false when it already was. */
  markUsed(id: number, at: Date): Promise<boolean>;
  /** Deletes every verification of the user. */
  removeAllOf(userId: number): Promise<void>;
  /** Queues an event in the outbox, in this transaction: published after commit, never on rollback. */
  emit<D extends EventDescriptor>(event: D, payload: PayloadOf<D>, ctx: TraceContext): Promise<void>;
  /** Claims a message for a consumer once: false when it was handled before. */
  claimOnce(consumer: string, messageKey: string): Promise<boolean>;
}

export function createSignUpRepository(em: () => EntityManager): SignUpRepository {
  const txOf = ({ em: t, sql: executor }: Tx): SignUpTx => ({
    async pendingExpiryOf(userId) {
      const row = await t.findOne(
        EmailVerification,
        { userId, usedAt: null },
        { orderBy: { createdAt: "desc" } },
      );
      return row?.expiresAt;
    },
    async replaceUnused(row) {
      await t.nativeDelete(EmailVerification, { userId: row.userId, usedAt: null });
      t.create(EmailVerification, { ...row, createdAt: new Date(), usedAt: null });
      await t.flush();
    },
    markUsed: async (id, at) =>
      (await t.nativeUpdate(EmailVerification, { id, usedAt: null }, { usedAt: at })) === 1,
    async removeAllOf(userId) {
      await t.nativeDelete(EmailVerification, { userId });
    },
    async emit(event, payload, ctx) {
      await enqueue(executor, event, payload, { schema: AUTH_SCHEMA, context: ctx });
    },
    claimOnce: (consumer, messageKey) => claimMessage(executor, { consumer, messageKey }, AUTH_SCHEMA),
  });

  return {
    transaction: (work) => inTransaction(em(), (tx) => work(txOf(tx))),
    findByTokenHash: (tokenHash) => em().findOne(EmailVerification, { tokenHash }),
    pruneExpired: (before) => em().nativeDelete(EmailVerification, { expiresAt: { $lt: before } }),
  };
}
