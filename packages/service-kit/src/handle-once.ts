import type { MessageContext } from "@fundraise/bus";
import { processOnce } from "@fundraise/outbox";
import type { EntityManager } from "@mikro-orm/postgresql";
import { executorOf } from "./sql.ts";

/**
 * Runs an event handler's `work` once per message, in one transaction with the claim
 * (`<schema>.processed_message`): a redelivery or a replay of a handled message does nothing, and a failure
 * rolls the claim back with the effects, so the bus's retry runs it again. `key` names the message: its
 * messageId by default, or a business key such as a chain fact's `chainId:txHash:logIndex`, which stays the
 * same when the fact is published again under a new message id. Returns false for a duplicate.
 */
export async function handleOnce(
  em: EntityManager,
  claim: { schema: string; consumer: string; key?: string },
  ctx: Pick<MessageContext, "messageId" | "log" | "markDuplicate">,
  work: (em: EntityManager) => Promise<void>,
): Promise<boolean> {
  const messageKey = claim.key ?? ctx.messageId;
  return em.transactional(async (tx) => {
    const outcome = await processOnce(
      executorOf(tx),
      { consumer: claim.consumer, messageKey },
      () => work(tx),
      { schema: claim.schema },
    );
    if (outcome.duplicate) {
      ctx.log.debug({ messageKey }, "already processed");
      // The journal records this delivery as a duplicate skipped, not as handled.
      ctx.markDuplicate?.();
    }
    return !outcome.duplicate;
  });
}
