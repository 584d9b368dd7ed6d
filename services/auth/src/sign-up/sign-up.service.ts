import { createHash, randomBytes } from "node:crypto";
import { type Bus, type RequestContext, type WithMessage, withMessage } from "@fundraise/bus";
import {
  AuthEvents,
  type AuthRpc,
  ErrorCode,
  errors,
  isAppError,
  type RequestOf,
  UsersRpc,
} from "@fundraise/protocol";
import type { Mailer } from "../mail/mailer.ts";
import { validateRegistration } from "../sign-in/input.ts";
import { ipAddressSubject, ipSubject, type RateLimiter } from "../sign-in/rate-limiter.ts";
import type { Origin } from "../sign-in/sign-in.service.ts";
import type { VerifySignedMessage } from "../signatures/signed-message.ts";
import type { SignUpRepository, SignUpTx } from "./sign-up.repository.ts";

type RegisterRequest = RequestOf<typeof AuthRpc.register>["register"];
type VerificationEntry = {
  userId: number;
  mailAddress: string;
  name?: string;
  reason: "register" | "email-changed";
  expiresAt: Date;
};
/** An event handled once: its consumer and the message's key (its id). */
export type Claim = { consumer: string; messageKey: string };

/** 32 random bytes, base64url: 43 characters. */
const VERIFICATION_TOKEN = /^[A-Za-z0-9_-]{43}$/;
const hashToken = (token: string): string => createHash("sha256").update(token).digest("hex");

export { REGISTER_SIGNATURE_MESSAGE } from "../signatures/signed-message.ts";
export const VERIFIED_MESSAGE = "Your e-mail address is verified.";
export const LINK_EXPIRED_MESSAGE = "The link has expired; fill in the sign-up form again.";
export const LINK_INVALID_MESSAGE = "This verification link is not valid.";
export const MAIL_NOT_SENT_MESSAGE =
  "Registered, but the verification e-mail could not be sent; register again with the same details to re-send it.";

/** Sign-up (rules.md §2, §7): a signed registration, and the e-mail link that verifies it. */
export interface SignUpService {
  /** The new user's id; with a message when the verification mail could not be sent (rules.md §2.9). */
  register(
    request: RegisterRequest,
    origin: Origin,
    ctx: RequestContext,
  ): Promise<string | WithMessage<string>>;
  verifyEmail(email: string, token: string, ctx: RequestContext): Promise<string>;
  /**
   * A user's changed e-mail address (once per `claim`): a new link to it, older unused ones replaced. A mail
   * failure rejects and rolls the link and the claim back, so the bus retries.
   */
  verifyNewAddress(user: { userId: number; mailAddress: string }, claim: Claim): Promise<boolean>;
  /** A deleted user's verification links go (once per `claim`). */
  forgetUser(userId: number, claim: Claim): Promise<boolean>;
  /** Forgets links that expired before `before`. */
  pruneExpired(before: Date): Promise<number>;
}

export interface SignUpServiceDeps {
  bus: Pick<Bus, "call">;
  verifications: SignUpRepository;
  rateLimiter: RateLimiter;
  mailer: Mailer;
  verifySignedMessage: VerifySignedMessage;
  settings: {
    publicBaseUrl: string;
    verificationTtlHours: number;
    limits: { registerPerIpPerHour: number; registerPerIpAddressPerHour: number };
  };
}

export function createSignUpService(deps: SignUpServiceDeps): SignUpService {
  const { bus, verifications, rateLimiter, mailer, verifySignedMessage, settings } = deps;
  const verificationTtlMs = settings.verificationTtlHours * 3_600_000;
  const limits = settings.limits;

  const verificationLink = (mailAddress: string, token: string) =>
    `${settings.publicBaseUrl}/Authentication/verify-email?email=${encodeURIComponent(mailAddress)}&token=${token}`;

  const mailVerification = (entry: VerificationEntry, token: string) =>
    mailer.sendVerification({
      to: entry.mailAddress,
      link: verificationLink(entry.mailAddress, token),
      name: entry.name ?? "",
      reason: entry.reason,
      validHours: Math.max(1, Math.round((entry.expiresAt.getTime() - Date.now()) / 3_600_000)),
    });

  /**
   * A new verification token for the user's address: only its hash is stored, in place of the user's older
   * unused ones (their links stop working; used ones stay, so a link followed twice still answers 200). The
   * token itself exists nowhere else: it goes into the mail and is forgotten.
   */
  async function issue(t: SignUpTx, entry: VerificationEntry): Promise<string> {
    const token = randomBytes(32).toString("base64url");
    const { userId, mailAddress, expiresAt } = entry;
    await t.replaceUnused({ userId, mailAddress, expiresAt, tokenHash: hashToken(token) });
    return token;
  }

  /** Runs `work` in a transaction with the claim; false (and nothing done) when it was handled before. */
  const once = (claim: Claim, work: (t: SignUpTx) => Promise<void>) =>
    verifications.transaction(async (t) => {
      if (!(await t.claimOnce(claim.consumer, claim.messageKey))) return false;
      await work(t);
      return true;
    });

  return {
    verifyNewAddress: (user, claim) =>
      once(claim, async (t) => {
        const entry: VerificationEntry = {
          userId: user.userId,
          mailAddress: user.mailAddress,
          reason: "email-changed",
          expiresAt: new Date(Date.now() + verificationTtlMs),
        };
        await mailVerification(entry, await issue(t, entry));
      }),

    forgetUser: (userId, claim) => once(claim, (t) => t.removeAllOf(userId)),

    pruneExpired: (before) => verifications.pruneExpired(before),

    async register(request, origin, ctx) {
      const fields = validateRegistration(request);
      // The address is the signer's (`REGISTER`, `REGISTER: <nonce>`) or the SIWE message's. How the
      // wallet's consent is proven (rules.md §7.2): the constant `REGISTER` text is `legacy` (its
      // signature can be replayed by whoever saw it); a GetNonce nonce, consumed here, is `nonce`.
      const { address, proof } = await verifySignedMessage({
        purpose: "register",
        signedMessage: request.signedMessage,
        message: request.message,
        log: ctx.log,
        // Per client IP and per IP + address, never per address alone (rules.md §7.3, §9.4).
        limit: (signer) =>
          rateLimiter.hit([
            {
              action: "register",
              subject: ipSubject(origin.ip),
              limit: limits.registerPerIpPerHour,
              windowSeconds: 3600,
            },
            {
              action: "register",
              subject: ipAddressSubject(origin.ip, signer),
              limit: limits.registerPerIpAddressPerHour,
              windowSeconds: 3600,
            },
          ]),
      });

      // The users service decides (rules.md §2.8, §7.2): a new sign-up, a replaced one (expired, or pending
      // and legacy-proven while this one is nonce-proven), the same pending sign-up again (`resent`: nothing
      // changed, the link is mailed again), or 409.
      const { userId, resent } = await bus.call(
        UsersRpc.register,
        {
          address,
          ...fields,
          pendingUntil: new Date(Date.now() + verificationTtlMs).toISOString(),
          proof,
        },
        ctx,
      );

      const [entry, token] = await verifications.transaction(async (t) => {
        // A re-sent link keeps the sign-up's deadline: the users service frees the data at that time.
        const expiresAt =
          (resent ? await t.pendingExpiryOf(userId) : undefined) ?? new Date(Date.now() + verificationTtlMs);
        if (!resent) await t.emit(AuthEvents.registered, { userId, address }, ctx);
        const next: VerificationEntry = {
          userId,
          mailAddress: fields.mailAddress,
          name: fields.name,
          reason: "register",
          expiresAt,
        };
        return [next, await issue(t, next)] as const;
      });
      // Mail goes out after the commit, so the link always works when it arrives.
      let mailed = true;
      try {
        await mailVerification(entry, token);
      } catch (err) {
        // The account and the token stay; registering again re-sends (rules.md §2.9).
        mailed = false;
        ctx.log.warn({ err, userId }, "verification mail could not be sent; registering again re-sends it");
      }
      ctx.log.info(
        { userId, resent, mailed, proof },
        resent ? "verification mail re-sent" : "user registered",
      );
      return mailed ? String(userId) : withMessage(String(userId), MAIL_NOT_SENT_MESSAGE);
    },

    async verifyEmail(email, token, ctx) {
      const invalid = () => errors.validation(ErrorCode.VERIFICATION_TOKEN_INVALID, LINK_INVALID_MESSAGE);
      const mail = email.trim();
      const secret = token.trim();
      if (!VERIFICATION_TOKEN.test(secret) || mail === "") throw invalid();
      const entry = await verifications.findByTokenHash(hashToken(secret));
      if (!entry || entry.mailAddress.toLowerCase() !== mail.toLowerCase()) throw invalid();
      if (entry.usedAt) return VERIFIED_MESSAGE;
      if (entry.expiresAt.getTime() <= Date.now()) {
        throw errors.gone(ErrorCode.VERIFICATION_LINK_EXPIRED, LINK_EXPIRED_MESSAGE);
      }
      const account = await bus
        .call(UsersRpc.markVerified, { userId: entry.userId, mailAddress: entry.mailAddress }, ctx)
        .catch((error: unknown) => {
          // The sign-up was replaced or deleted since the link was sent: the link is not valid any more.
          if (isAppError(error) && error.code === ErrorCode.USER_NOT_FOUND) throw invalid();
          throw error;
        });
      await verifications.transaction(async (t) => {
        // Two clicks at once: only the one that marks the token publishes the event.
        if (!(await t.markUsed(entry.id, new Date()))) return;
        await t.emit(AuthEvents.verified, { userId: account.id, address: account.address }, ctx);
      });
      ctx.log.info({ userId: account.id }, "e-mail address verified");
      return VERIFIED_MESSAGE;
    },
  };
}
