import { type Bus, enqueue, type RequestContext, type WithMessage, withMessage } from "@fundraise/bus";
import {
  AuthEvents,
  type AuthRpc,
  ErrorCode,
  errors,
  isAppError,
  type RequestOf,
  type UserAccount,
  UsersRpc,
} from "@fundraise/protocol";
import { executorOf, type Logger, translateDbError } from "@fundraise/service-kit";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Static } from "typebox";
import type { ChainReader } from "../chain/chain.ts";
import type { TokenIssuer } from "../keys/token-issuer.ts";
import type { Mailer } from "../mail/mailer.ts";
import type { SessionStore } from "../sessions/session-store.ts";
import { createSignedMessageVerifier, refusal } from "../signatures/signed-message.ts";
import {
  findVerification,
  issueVerification,
  markUsed,
  pendingExpiryOf,
  VERIFICATION_TOKEN,
} from "../verification/verification.repository.ts";
import { requireAddress, validateRegistration } from "./input.ts";
import type { NonceStore } from "./nonce-store.ts";
import { ipAddressSubject, ipSubject, type RateLimiter } from "./rate-limiter.ts";

type Account = Static<typeof UserAccount>;
type LoginRequest = RequestOf<typeof AuthRpc.login>["login"];
type RegisterRequest = RequestOf<typeof AuthRpc.register>["register"];
/** Where a call came from (the gateway's client IP): rate limits count per IP and per IP + address. */
type Origin = RequestOf<typeof AuthRpc.login>["origin"];
type VerificationEntry = {
  userId: number;
  mailAddress: string;
  name?: string;
  reason: "register" | "email-changed";
  expiresAt: Date;
};
/** What a use case knows about the message that asked for it; passed on to its calls and events as is. */
export type CallContext = RequestContext;

export { LOGIN_FAILED_MESSAGE, REGISTER_SIGNATURE_MESSAGE } from "../signatures/signed-message.ts";
export const VERIFIED_MESSAGE = "Your e-mail address is verified.";
export const LINK_EXPIRED_MESSAGE = "The link has expired; fill in the sign-up form again.";
export const LINK_INVALID_MESSAGE = "This verification link is not valid.";
export const NOT_VERIFIED_MESSAGE = "Verify your e-mail first.";
export const MAIL_NOT_SENT_MESSAGE =
  "Registered, but the verification e-mail could not be sent; register again with the same details to re-send it.";

export interface AuthService {
  issueNonce(address: string, origin: Origin): Promise<number>;
  login(request: LoginRequest, origin: Origin, ctx: CallContext): Promise<string>;
  /** The new user's id; with a message when the verification mail could not be sent (behaviour.md §2). */
  register(request: RegisterRequest, origin: Origin, ctx: CallContext): Promise<string | WithMessage<string>>;
  verifyEmail(email: string, token: string, ctx: CallContext): Promise<string>;
  /** Creates a verification token for (user, address) and mails the link; rejects when the mail fails. */
  sendVerification(em: EntityManager, entry: VerificationEntry): Promise<void>;
}

export interface AuthServiceDeps {
  bus: Pick<Bus, "call">;
  em: () => EntityManager;
  nonces: NonceStore;
  rateLimiter: RateLimiter;
  chain: ChainReader;
  tokens: TokenIssuer;
  sessions: SessionStore;
  mailer: Mailer;
  log: Logger;
  settings: {
    publicBaseUrl: string;
    siweDomain: string;
    nonceTtlSeconds: number;
    clockSkewSeconds: number;
    legacyMessages: boolean;
    verificationTtlHours: number;
    rateLimits: {
      noncePerIpPerMinute: number;
      noncePerIpAddressPerMinute: number;
      loginFailuresPerIpPerMinute: number;
      loginFailuresPerIpAddressPerMinute: number;
      registerPerIpPerHour: number;
      registerPerIpAddressPerHour: number;
    };
  };
}

const dbUnavailable = (error: unknown) => translateDbError(error);

export function createAuthService(deps: AuthServiceDeps): AuthService {
  const { bus, nonces, rateLimiter, chain, tokens, sessions, mailer, settings } = deps;
  const verificationTtlMs = settings.verificationTtlHours * 3_600_000;
  const limits = settings.rateLimits;
  // Login and register check signed messages (legacy texts, EIP-4361, EIP-1271) and consume nonces alike.
  const verifySignedMessage = createSignedMessageVerifier({ nonces, chain, settings });

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

  async function sendVerification(em: EntityManager, entry: VerificationEntry): Promise<void> {
    await mailVerification(entry, await issueVerification(em, entry));
  }

  /**
   * Reads the chain role and tells the users service when the chain changed since it last saw it; the
   * users service decides whether the chain's change or an admin's is newer (behaviour.md §7).
   */
  async function refreshRole(account: Account, ctx: CallContext): Promise<Account | null> {
    const role = await chain.roleOf(account.address);
    if (role === account.chainRole) return account;
    const current = await bus.call(UsersRpc.setChainRole, { address: account.address, role }, ctx);
    if (current && current.role !== account.role) {
      ctx.log.info(
        { userId: account.id, from: account.role, to: current.role },
        "role refreshed from the chain at login",
      );
    }
    return current;
  }

  return {
    sendVerification,

    async issueNonce(address, origin) {
      const checked = requireAddress(address);
      await rateLimiter.hit([
        {
          action: "nonce",
          subject: ipSubject(origin.ip),
          limit: limits.noncePerIpPerMinute,
          windowSeconds: 60,
        },
        {
          action: "nonce",
          subject: ipAddressSubject(origin.ip, checked),
          limit: limits.noncePerIpAddressPerMinute,
          windowSeconds: 60,
        },
      ]);
      return nonces.issue(checked, origin.ip);
    },

    async login(request, origin, ctx) {
      // The address (the request's, or a SIWE message's when the request names none), the nonce the
      // signature proves, consumed (the existing web client sends only the signature of `LOGIN: <nonce>`).
      const { address, limited: attempt } = await verifySignedMessage({
        purpose: "login",
        address: request.address,
        signedMessage: request.signedMessage,
        message: request.message,
        log: ctx.log,
        // Failed sign-ins are limited per client IP and per IP + address, never per address alone: anyone
        // could otherwise lock an address's owner out (behaviour.md §7). A success is taken back below.
        limit: (claimed) =>
          rateLimiter.hit([
            {
              action: "login",
              subject: ipSubject(origin.ip),
              limit: limits.loginFailuresPerIpPerMinute,
              windowSeconds: 60,
            },
            {
              action: "login",
              subject: ipAddressSubject(origin.ip, claimed),
              limit: limits.loginFailuresPerIpAddressPerMinute,
              windowSeconds: 60,
            },
          ]),
      });
      const refuse = (reason: string) => refusal("login", ctx.log, reason, address);

      const account = await bus.call(UsersRpc.byAddress, { address }, ctx);
      if (!account) throw refuse("unknown address");
      if (!account.isVerified) throw errors.forbidden(ErrorCode.EMAIL_NOT_VERIFIED, NOT_VERIFIED_MESSAGE);
      const current = await refreshRole(account, ctx);
      if (!current) throw refuse("user removed during sign-in");
      // The gateway prefers the session's role to the claim: it must be this one before the token is out.
      let revokedBefore: number | null;
      try {
        revokedBefore = await sessions.setRole(current.id, current.role);
      } catch (cause) {
        throw errors.unavailable(
          ErrorCode.SERVICE_UNAVAILABLE,
          "Sign-in is unavailable right now; try again.",
          {
            cause,
          },
        );
      }
      // Revocation rounds up to the next second: a token of this second must not be dated before it.
      const { token } = await tokens.issue(current, { notBefore: revokedBefore ?? 0 });
      // A sign-in that succeeded is not a failure: it does not count against the limits.
      await attempt.refund();
      ctx.log.info({ userId: current.id, role: current.role }, "signed in");
      return token;
    },

    async register(request, origin, ctx) {
      const fields = validateRegistration(request);
      // The address is the signer's (`REGISTER`, `REGISTER: <nonce>`) or the SIWE message's. How the
      // wallet's consent is proven (behaviour.md §7): the constant `REGISTER` text is `legacy` (its
      // signature can be replayed by whoever saw it); a GetNonce nonce, consumed here, is `nonce`.
      const { address, proof } = await verifySignedMessage({
        purpose: "register",
        signedMessage: request.signedMessage,
        message: request.message,
        log: ctx.log,
        // Per client IP and per IP + address, never per address alone (behaviour.md §7).
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

      // The users service decides (behaviour.md §2, §7): a new sign-up, a replaced one (expired, or pending
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

      let entry: VerificationEntry;
      let token: string;
      try {
        [entry, token] = await deps.em().transactional(async (em) => {
          // A re-sent link keeps the sign-up's deadline: the users service frees the data at that time.
          const expiresAt =
            (resent ? await pendingExpiryOf(em, userId) : undefined) ??
            new Date(Date.now() + verificationTtlMs);
          if (!resent) {
            const event = { userId, address };
            await enqueue(executorOf(em), AuthEvents.registered, event, { schema: "auth", context: ctx });
          }
          const next: VerificationEntry = {
            userId,
            mailAddress: fields.mailAddress,
            name: fields.name,
            reason: "register",
            expiresAt,
          };
          return [next, await issueVerification(em, next)] as const;
        });
      } catch (error) {
        throw dbUnavailable(error);
      }
      // Mail goes out after the commit, so the link always works when it arrives.
      let mailed = true;
      try {
        await mailVerification(entry, token);
      } catch (err) {
        // The account and the token stay; registering again re-sends (behaviour.md §2).
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
      const entry = await findVerification(deps.em(), secret, mail).catch((error: unknown) => {
        throw dbUnavailable(error);
      });
      if (!entry) throw invalid();
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
      try {
        await deps.em().transactional(async (em) => {
          // Two clicks at once: only the one that marks the token publishes the event.
          if (!(await markUsed(em, entry.id, new Date()))) return;
          await enqueue(
            executorOf(em),
            AuthEvents.verified,
            { userId: account.id, address: account.address },
            { schema: "auth", context: ctx },
          );
        });
      } catch (error) {
        throw dbUnavailable(error);
      }
      ctx.log.info({ userId: account.id }, "e-mail address verified");
      return VERIFIED_MESSAGE;
    },
  };
}
