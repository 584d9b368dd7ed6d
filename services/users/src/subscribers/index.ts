import type { Bus } from "@fundraise/bus";
import { ChainEvents } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";

/** The consumer name: queues are `users.<event>`. */
export const CONSUMER = "users";

/** The events the users service consumes, each straight to its use case. */
export async function subscribeUsers(bus: Bus, users: UserService): Promise<void> {
  // The registry changed an address's status: the known user with it gets that role (once per log).
  // One at a time: role facts of an address must be applied in the order the chain produced them.
  await bus.subscribe(
    CONSUMER,
    ChainEvents.userStatusChanged,
    (fact, ctx) => users.applyChainStatus(fact, ctx),
    {
      prefetch: 1,
    },
  );
  // A reorg removed a fact: a status fact's user gets the role the index holds now (same single file).
  await bus.subscribe(
    CONSUMER,
    ChainEvents.factRetracted,
    (retraction, ctx) => users.retractChainStatus(retraction, ctx),
    { prefetch: 1 },
  );
}
