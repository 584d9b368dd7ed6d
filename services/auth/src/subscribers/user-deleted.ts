import type { EventHandler } from "@fundraise/bus";
import { UsersEvents } from "@fundraise/protocol";
import { handleOnce } from "@fundraise/service-kit";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { ApplySessionChange } from "../sessions/session-changes.ts";
import { deleteVerificationsOf } from "../sign-up/verification.repository.ts";
import { claimFor } from "./consumer.ts";

/**
 * A deleted user's tokens stop working (the session is marked deleted, which the users service did before
 * the deletion answered; this delivery repeats it harmlessly); their verification links go too.
 */
export const onUserDeleted =
  (deps: {
    em: () => EntityManager;
    applySessionChange: ApplySessionChange;
  }): EventHandler<typeof UsersEvents.deleted> =>
  async (payload, ctx) => {
    await deps.applySessionChange({
      userId: payload.userId,
      address: payload.address,
      version: payload.version ?? 1,
      role: null,
      revoke: true,
      deleted: true,
    });
    await handleOnce(deps.em(), claimFor(UsersEvents.deleted), ctx, async (em) => {
      await deleteVerificationsOf(em, payload.userId);
    });
    ctx.log.info({ userId: payload.userId }, "tokens of a deleted user refused; links removed");
  };
