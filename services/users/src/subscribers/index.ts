import type { Bus } from "@fundraise/bus";
import { ChainEvents, ProjectsEvents } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";
import { onChainUserStatusChanged } from "./chain-user-status-changed.ts";
import { onProjectCreated } from "./projects-project-created.ts";
import { onProjectDeleted } from "./projects-project-deleted.ts";

/** The consumer name: queues are `users.<event>`. */
export const CONSUMER = "users";

/** The events the users service consumes. */
export async function subscribeUsers(bus: Bus, users: UserService): Promise<void> {
  // One at a time: role facts of an address must be applied in the order the chain produced them.
  await bus.subscribe(CONSUMER, ChainEvents.userStatusChanged, onChainUserStatusChanged(users), {
    prefetch: 1,
  });
  await bus.subscribe(CONSUMER, ProjectsEvents.created, onProjectCreated(users));
  await bus.subscribe(CONSUMER, ProjectsEvents.deleted, onProjectDeleted(users));
}
