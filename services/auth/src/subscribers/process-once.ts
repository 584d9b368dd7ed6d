import { type MessageContext, processOnce } from "@fundraise/bus";
import type { EntityManager } from "@mikro-orm/postgresql";
import { sqlExecutorOf } from "../db/sql.ts";

/** The consumer name of every auth subscription (queues `auth.<event>`). */
export const CONSUMER = "auth";

/**
 * Runs `work` once per message id, in one transaction with the claim (`auth.processed_message`): a
 * redelivery or a replay of a handled message does nothing; a failure rolls the claim back with the effects,
 * so the bus's retry runs it again. Returns false for a duplicate.
 */
export async function handleOnce(
  em: EntityManager,
  event: string,
  ctx: Pick<MessageContext, "messageId" | "log">,
  work: (em: EntityManager) => Promise<void>,
): Promise<boolean> {
  return em.transactional(async (tx) => {
    const outcome = await processOnce(
      sqlExecutorOf(tx),
      { consumer: `${CONSUMER}.${event}`, messageKey: ctx.messageId },
      () => work(tx),
      { schema: "auth" },
    );
    if (outcome.duplicate) ctx.log.debug({ messageId: ctx.messageId }, "already processed");
    return !outcome.duplicate;
  });
}
