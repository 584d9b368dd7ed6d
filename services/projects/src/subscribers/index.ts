import type { Bus } from "@fundraise/bus";
import { ChainEvents, UsersEvents } from "@fundraise/protocol";
import type { ChainSync } from "../projects/chain.service.ts";
import type { UserFenceService } from "../projects/user-fence.service.ts";

/** The consumer name: queues are `projects.<event>`. */
export const CONSUMER = "projects";

/** The events the projects service consumes, each straight to its use case. */
export async function subscribeProjects(bus: Bus, fences: UserFenceService, chain: ChainSync): Promise<void> {
  // A deleted user's memberships, invitations and ratings go (idempotent: deleting twice deletes nothing).
  await bus.subscribe(CONSUMER, UsersEvents.deleted, ({ userId }, ctx) => fences.removeUser(userId, ctx));
  // Chain facts from the chain-indexer, each applied once per (chainId, txHash, logIndex). One at a time:
  // facts about one project must be compared with what the previous fact left.
  const inOrder = { prefetch: 1 };
  await bus.subscribe(
    CONSUMER,
    ChainEvents.projectEvaluated,
    (fact, ctx) => chain.applyEvaluation(fact, ctx),
    inOrder,
  );
  await bus.subscribe(
    CONSUMER,
    ChainEvents.auctionCreated,
    (fact, ctx) => chain.applyAuctionCreated(fact, ctx),
    inOrder,
  );
  await bus.subscribe(
    CONSUMER,
    ChainEvents.auctionStatusChanged,
    (fact, ctx) => chain.applyAuctionStatus(fact, ctx),
    inOrder,
  );
  // A reorg took a fact back: what it set is recomputed from the facts that still stand.
  await bus.subscribe(
    CONSUMER,
    ChainEvents.factRetracted,
    (fact, ctx) => chain.applyRetraction(fact, ctx),
    inOrder,
  );
}
