import type { EventHandler } from "@fundraise/bus";
import type { ChainEvents } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";

/** The registry changed an address's status: the known user with it gets that role (once per log). */
export const onChainUserStatusChanged =
  (users: UserService): EventHandler<typeof ChainEvents.userStatusChanged> =>
  async (fact, ctx) =>
    users.applyChainStatus(fact, ctx);
