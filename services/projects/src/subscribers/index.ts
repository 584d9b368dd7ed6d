import type { Bus, EventHandler } from "@fundraise/bus";
import { ChainEvents, type EventDescriptor, UsersEvents } from "@fundraise/protocol";
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
  const inOrder = <D extends EventDescriptor>(event: D, apply: EventHandler<D>) =>
    bus.subscribe(CONSUMER, event, apply, { prefetch: 1 });
  await inOrder(ChainEvents.projectEvaluated, (fact, ctx) => chain.applyEvaluation(fact, ctx));
  await inOrder(ChainEvents.auctionCreated, (fact, ctx) => chain.applyAuctionCreated(fact, ctx));
  await inOrder(ChainEvents.auctionStatusChanged, (fact, ctx) => chain.applyAuctionStatus(fact, ctx));
  // Bids and claims change no field; the project's live readers hear of them.
  await inOrder(ChainEvents.bidSubmitted, (fact, ctx) => chain.applyAuctionActivity(fact, ctx));
  await inOrder(ChainEvents.tokensClaimed, (fact, ctx) => chain.applyAuctionActivity(fact, ctx));
  // A reorg took a fact back: what it set is recomputed from the facts that still stand.
  await inOrder(ChainEvents.factRetracted, (fact, ctx) => chain.applyRetraction(fact, ctx));
}
