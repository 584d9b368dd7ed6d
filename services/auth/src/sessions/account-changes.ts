import type { MessageContext } from "@fundraise/bus";
import {
  type EventDescriptor,
  type PayloadOf,
  type SessionChange,
  type SessionState,
  UsersEvents,
} from "@fundraise/protocol";
import type { AccountCopy } from "../sign-in/account-copy.ts";
import type { SignUpService } from "../sign-up/sign-up.service.ts";
import type { SessionStore } from "./session-store.ts";

type EventContext = MessageContext;
type Payload<D extends EventDescriptor> = PayloadOf<D>;

/**
 * What a change the users service made to an account does here: the session, the sign-in copy of the
 * account, the verification links. A session change comes first as the users service's call before the
 * change answers (`auth.session.apply`), then again as its event (role-changed, deleted), which changes
 * nothing the call already did. The account copy always goes first, so a sign-in that sees the change in the
 * session reads the account again.
 */
export interface AccountChanges {
  /** `auth.session.apply`: idempotent, merged by version. */
  apply(change: SessionChange): Promise<SessionState>;
  /**
   * The session role follows the user's role. An admin's change also invalidates older tokens (rules.md
   * §2.14); a change that came from the chain only updates the role.
   */
  roleChanged(event: Payload<typeof UsersEvents.roleChanged>, ctx: EventContext): Promise<void>;
  /**
   * A deleted user's tokens stop working (the session is marked deleted, which the users service did before
   * the deletion answered); their verification links go too.
   */
  deleted(event: Payload<typeof UsersEvents.deleted>, ctx: EventContext): Promise<void>;
  /** A changed e-mail address is unverified until its link is followed: mail one. */
  emailChanged(event: Payload<typeof UsersEvents.emailChanged>, ctx: EventContext): Promise<void>;
  /** Any sign-in field changed, or the account is gone: its copy goes (dropping twice is harmless). */
  accountChanged(event: Payload<typeof UsersEvents.accountChanged>, ctx: EventContext): Promise<void>;
}

export function createAccountChanges(deps: {
  sessions: SessionStore;
  accounts: AccountCopy;
  signUp: Pick<SignUpService, "verifyNewAddress" | "forgetUser">;
  /** The consumer name: an event's handling is claimed as `<consumer>.<event name>`. */
  consumer: string;
}): AccountChanges {
  const { sessions, accounts, signUp } = deps;
  const claimOf = (event: EventDescriptor, ctx: EventContext) => ({
    consumer: `${deps.consumer}.${event.name}`,
    messageKey: ctx.messageId,
  });

  async function apply(change: SessionChange): Promise<SessionState> {
    await accounts.invalidate(change.address);
    return sessions.apply(change);
  }

  return {
    apply,

    async roleChanged(event, ctx) {
      if (event.version === undefined) {
        // An event of the layout before account versions: the next sign-in writes the role.
        await accounts.invalidate(event.address);
        ctx.log.info({ userId: event.userId }, "role change without an account version: copy dropped only");
        return;
      }
      await apply({
        userId: event.userId,
        address: event.address,
        version: event.version,
        role: event.role,
        revoke: event.changedBy !== "chain",
        deleted: false,
      });
      ctx.log.info(
        { userId: event.userId, role: event.role, changedBy: event.changedBy, version: event.version },
        "session role updated",
      );
    },

    async deleted(event, ctx) {
      const { userId, address } = event;
      await apply({ userId, address, version: event.version ?? 1, role: null, revoke: true, deleted: true });
      await signUp.forgetUser(userId, claimOf(UsersEvents.deleted, ctx));
      ctx.log.info({ userId }, "tokens of a deleted user refused; links removed");
    },

    async emailChanged(event, ctx) {
      // The account is unverified now: its copy goes (the trigger's account-changed says so too, later).
      await accounts.invalidate(event.address);
      if (await signUp.verifyNewAddress(event, claimOf(UsersEvents.emailChanged, ctx)))
        ctx.log.info({ userId: event.userId }, "verification mail sent to a changed address");
      else ctx.markDuplicate?.();
    },

    async accountChanged(event, ctx) {
      await accounts.invalidate(event.address);
      ctx.log.debug({ userId: event.userId }, "account copy dropped");
    },
  };
}
