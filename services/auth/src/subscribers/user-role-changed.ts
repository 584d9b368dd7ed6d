import type { EventHandler } from "@fundraise/bus";
import type { UsersEvents } from "@fundraise/protocol";
import type { ApplySessionChange } from "../sessions/session-changes.ts";
import type { AccountCopy } from "../sign-in/account-copy.ts";

/**
 * The session role follows the user's role. An admin's change also invalidates older tokens (behaviour.md
 * §2); a change that came from the chain only updates the role. An admin's change reached the session
 * before it answered (`auth.session.apply`): this delivery then changes nothing.
 */
export const onUserRoleChanged =
  (deps: {
    applySessionChange: ApplySessionChange;
    accounts: AccountCopy;
  }): EventHandler<typeof UsersEvents.roleChanged> =>
  async (payload, ctx) => {
    if (payload.version === undefined) {
      // An event of the layout before account versions: the next sign-in writes the role.
      await deps.accounts.invalidate(payload.address);
      ctx.log.info({ userId: payload.userId }, "role change without an account version: copy dropped only");
      return;
    }
    await deps.applySessionChange({
      userId: payload.userId,
      address: payload.address,
      version: payload.version,
      role: payload.role,
      revoke: payload.changedBy !== "chain",
      deleted: false,
    });
    ctx.log.info(
      { userId: payload.userId, role: payload.role, changedBy: payload.changedBy, version: payload.version },
      "session role updated",
    );
  };
