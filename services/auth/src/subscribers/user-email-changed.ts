import type { EventHandler } from "@fundraise/bus";
import { UsersEvents } from "@fundraise/protocol";
import { handleOnce } from "@fundraise/service-kit";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { AccountCopy } from "../sign-in/account-copy.ts";
import type { SignUpService } from "../sign-up/sign-up.service.ts";
import { claimFor } from "./consumer.ts";

/**
 * A changed e-mail address is unverified until its link is followed: mail one. A mail failure throws, so
 * the token is rolled back with the claim and the bus retries with backoff (then dead-letters).
 */
export const onUserEmailChanged =
  (deps: {
    em: () => EntityManager;
    accounts: AccountCopy;
    signUp: SignUpService;
    verificationTtlHours: number;
  }): EventHandler<typeof UsersEvents.emailChanged> =>
  async (payload, ctx) => {
    // The account is unverified now: its copy goes (the trigger's account-changed says so too, later).
    await deps.accounts.invalidate(payload.address);
    await handleOnce(deps.em(), claimFor(UsersEvents.emailChanged), ctx, async (em) => {
      await deps.signUp.sendVerification(em, {
        userId: payload.userId,
        mailAddress: payload.mailAddress,
        reason: "email-changed",
        expiresAt: new Date(Date.now() + deps.verificationTtlHours * 3_600_000),
      });
      ctx.log.info({ userId: payload.userId }, "verification mail sent to a changed address");
    });
  };
