import type { EventHandler } from "@fundraise/bus";
import { UsersEvents } from "@fundraise/protocol";
import { handleOnce } from "@fundraise/service-kit";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { SessionStore } from "../sessions/session-store.ts";
import type { AccountCopy } from "../sign-in/account-copy.ts";
import { deleteVerificationsOf } from "../sign-up/verification.repository.ts";
import { claimFor } from "./consumer.ts";

/** A deleted user's tokens stop working at once (revokedBefore = now, role dropped); their links go too. */
export const onUserDeleted =
  (deps: {
    em: () => EntityManager;
    sessions: SessionStore;
    accounts: AccountCopy;
  }): EventHandler<typeof UsersEvents.deleted> =>
  async (payload, ctx) => {
    // The copy goes before the session changes: a sign-in that sees the change sees no old account.
    await deps.accounts.invalidate(payload.address);
    await handleOnce(deps.em(), claimFor(UsersEvents.deleted), ctx, async (em) => {
      await deleteVerificationsOf(em, payload.userId);
      await deps.sessions.revoke(payload.userId, null, em);
      ctx.log.info({ userId: payload.userId }, "tokens of a deleted user revoked");
    });
  };
