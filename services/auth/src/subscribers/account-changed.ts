import type { EventHandler } from "@fundraise/bus";
import type { UsersEvents } from "@fundraise/protocol";
import type { AccountCopy } from "../sign-in/account-copy.ts";

/**
 * An account changed (any sign-in field, or deleted): its copy goes, and the next sign-in reads it from the
 * users service. Dropping twice is harmless, so this handler needs no claim.
 */
export const onAccountChanged =
  (deps: { accounts: AccountCopy }): EventHandler<typeof UsersEvents.accountChanged> =>
  async (payload, ctx) => {
    await deps.accounts.invalidate(payload.address);
    ctx.log.debug({ userId: payload.userId }, "account copy dropped");
  };
