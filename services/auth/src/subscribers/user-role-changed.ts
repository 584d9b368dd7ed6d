import type { EventHandler } from "@fundraise/bus";
import { UsersEvents } from "@fundraise/protocol";
import { handleOnce } from "@fundraise/service-kit";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { SessionStore } from "../sessions/session-store.ts";
import type { AccountCopy } from "../sign-in/account-copy.ts";
import { claimFor } from "./consumer.ts";

/**
 * The session role follows the user's role at once. An admin's change also invalidates older tokens
 * (behaviour.md §2); a change that came from the chain only updates the role.
 */
export const onUserRoleChanged =
  (deps: {
    em: () => EntityManager;
    sessions: SessionStore;
    accounts: AccountCopy;
  }): EventHandler<typeof UsersEvents.roleChanged> =>
  async (payload, ctx) => {
    // The copy goes before the session changes: a sign-in that sees the change sees no old account.
    await deps.accounts.invalidate(payload.address);
    await handleOnce(deps.em(), claimFor(UsersEvents.roleChanged), ctx, async (em) => {
      if (payload.changedBy === "chain") {
        await deps.sessions.setRole(payload.userId, payload.role, em);
      } else {
        await deps.sessions.revoke(payload.userId, payload.role, em);
      }
      ctx.log.info(
        { userId: payload.userId, role: payload.role, changedBy: payload.changedBy },
        "session role updated",
      );
    });
  };
