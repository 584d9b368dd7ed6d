import type { SessionChange, SessionState } from "@fundraise/protocol";
import type { AccountCopy } from "../sign-in/account-copy.ts";
import type { SessionStore } from "./session-store.ts";

/**
 * A change the users service made to an account reaches the session: first as its call before the change
 * answers (`auth.session.apply`), then again as its event (role-changed, deleted), which changes nothing
 * the call already did. The account copy goes first, so a sign-in that sees the change reads the account
 * again.
 */
export type ApplySessionChange = (change: SessionChange) => Promise<SessionState>;

export const createSessionChanges =
  (deps: { sessions: SessionStore; accounts: AccountCopy }): ApplySessionChange =>
  async (change) => {
    await deps.accounts.invalidate(change.address);
    return deps.sessions.apply(change);
  };
