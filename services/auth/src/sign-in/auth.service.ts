import { type Bus, enqueue, type MessageContext } from "@fundraise/bus";
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
import { type Logger, translateDbError } from "@fundraise/service-kit";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Static } from "typebox";
import type { ChainReader } from "../chain/chain.ts";
import { sqlExecutorOf } from "../db/sql.ts";
import type { TokenIssuer } from "../keys/token-issuer.ts";
import type { Mailer } from "../mail/mailer.ts";
import type { SessionStore } from "../sessions/session-store.ts";
import {
  isSignedBy,
  LEGACY_REGISTER_MESSAGE,
  legacyLoginMessage,
  recoverSigner,
} from "../signatures/signature.ts";
import { checkSiweMessage, parseSiweMessage, type SiweMessage } from "../signatures/siwe.ts";
import {
  findVerification,
  issueVerification,
  markUsed,
  pendingExpiryOf,
  VERIFICATION_TOKEN,
} from "../verification/verification.repository.ts";
import {
  invalidFields,
  optionalMessage,
  requireAddress,
  requireSignature,
  validateRegistration,
} from "./input.ts";
import type { NonceStore } from "./nonce-store.ts";
import type { RateLimiter } from "./rate-limiter.ts";

type Account = Static<typeof UserAccount>;
type LoginRequest = RequestOf<typeof AuthRpc.login>["login"];
type RegisterRequest = RequestOf<typeof AuthRpc.register>["register"];
type VerificationEntry = {
  userId: number;
  mailAddress: string;
  name?: string;
  reason: "register" | "email-changed";
  expiresAt: Date;
};
/** The part of a message context a use case needs: who asked, and until when anyone waits. */
export type CallContext = Pick<MessageContext, "requestId" | "deadline" | "log">;

/** The one answer for every failed sign-in: it must not tell which part was wrong (behaviour.md §2). */
export const LOGIN_FAILED_MESSAGE = "Sign-in failed: the address, nonce or signature is not valid.";
export const REGISTER_SIGNATURE_MESSAGE = "The signature or the signed message is not valid.";
export const VERIFIED_MESSAGE = "Your e-mail address is verified.";
export const LINK_EXPIRED_MESSAGE = "The link has expired; fill in the sign-up form again.";
export const LINK_INVALID_MESSAGE = "This verification link is not valid.";
export const NOT_VERIFIED_MESSAGE = "Verify your e-mail first.";

export interface AuthService {
  issueNonce(address: string): Promise<number>;
  login(request: LoginRequest, ctx: CallContext): Promise<string>;
  register(request: RegisterRequest, ctx: CallContext): Promise<string>;
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
    rateLimits: { noncePerMinute: number; loginPerMinute: number; registerPerHour: number };
  };
}

const SIGN_UP_CONFLICTS: ReadonlySet<string> = new Set([
  ErrorCode.USER_ADDRESS_TAKEN,
  ErrorCode.USER_EMAIL_TAKEN,
  ErrorCode.USER_USERNAME_TAKEN,
]);

const callOptions = (ctx: CallContext) => ({
  requestId: ctx.requestId,
  ...(ctx.deadline === undefined ? {} : { deadline: ctx.deadline }),
});

const dbUnavailable = (error: unknown) => translateDbError(error);

export function createAuthService(deps: AuthServiceDeps): AuthService {
  const { bus, nonces, rateLimiter, chain, tokens, sessions, mailer, settings } = deps;
  const verificationTtlMs = settings.verificationTtlHours * 3_600_000;

  const siweExpectations = (nonce: number, address: string) => ({
    domain: settings.siweDomain,
    baseUrl: settings.publicBaseUrl,
    chainId: chain.chainId,
    nonce: String(nonce),
    address,
    now: new Date(),
    maxAgeSeconds: settings.nonceTtlSeconds,
    clockSkewSeconds: settings.clockSkewSeconds,
  });

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

  /** Reads the chain role and writes it to the users service when it differs (behaviour.md §6). */
  async function refreshRole(account: Account, ctx: CallContext): Promise<Account | null> {
    const role = await chain.roleOf(account.address);
    if (role === account.role) return account;
    ctx.log.info(
      { userId: account.id, from: account.role, to: role },
      "role refreshed from the chain at login",
    );
    return bus.call(UsersRpc.setChainRole, { address: account.address, role }, callOptions(ctx));
  }

  return {
    sendVerification,

    async issueNonce(address) {
      const checked = requireAddress(address);
      await rateLimiter.hit("nonce", checked, settings.rateLimits.noncePerMinute, 60);
      return nonces.issue(checked);
    },

    async login(request, ctx) {
      const signature = requireSignature(request.signedMessage);
      const text = optionalMessage(request.message);
      const isLegacy = text === undefined || /^LOGIN: \d+$/.test(text);
      let siwe: SiweMessage | undefined;
      let parseError: string | undefined;
      if (!isLegacy) {
        try {
          siwe = parseSiweMessage(text);
        } catch (error) {
          parseError = (error as Error).message;
        }
      }
      // The claimed address: the request's, or (SIWE only) the message's when the request has none.
      const address =
        optionalMessage(request.address) === undefined && siwe
          ? siwe.address
          : requireAddress(request.address);
      await rateLimiter.hit("login", address, settings.rateLimits.loginPerMinute, 60);

      // Consumed by this attempt, whatever its outcome.
      const nonce = await nonces.take(address);
      const refuse = (reason: string) => {
        ctx.log.info({ reason, address }, "login refused");
        return errors.unauthenticated(ErrorCode.LOGIN_FAILED, LOGIN_FAILED_MESSAGE);
      };
      if (nonce === undefined) throw refuse("no nonce (never issued, expired or used)");
      let signed: string;
      if (isLegacy) {
        if (!settings.legacyMessages) throw refuse("legacy messages are disabled");
        signed = legacyLoginMessage(nonce);
        if (text !== undefined && text !== signed) throw refuse("legacy message with another nonce");
      } else {
        if (!siwe) throw refuse(`not an EIP-4361 message: ${parseError}`);
        const problem = checkSiweMessage(siwe, siweExpectations(nonce, address));
        if (problem) throw refuse(`EIP-4361 check failed: ${problem}`);
        signed = text as string;
      }
      if (!(await isSignedBy(address, signed, signature, chain))) throw refuse("signature");

      const account = await bus.call(UsersRpc.byAddress, { address }, callOptions(ctx));
      if (!account) throw refuse("unknown address");
      if (!account.isVerified) throw errors.forbidden(ErrorCode.EMAIL_NOT_VERIFIED, NOT_VERIFIED_MESSAGE);
      const current = await refreshRole(account, ctx);
      if (!current) throw refuse("user removed during sign-in");
      const { token } = await tokens.issue(current);
      // The gateway prefers the session's role to the claim: it must be this one before the token is out.
      try {
        await sessions.setRole(current.id, current.role);
      } catch (cause) {
        throw errors.unavailable(
          ErrorCode.SERVICE_UNAVAILABLE,
          "Sign-in is unavailable right now; try again.",
          {
            cause,
          },
        );
      }
      ctx.log.info({ userId: current.id, role: current.role }, "signed in");
      return token;
    },

    async register(request, ctx) {
      const fields = validateRegistration(request);
      const signature = requireSignature(request.signedMessage);
      const text = optionalMessage(request.message);
      const badSignature = () =>
        errors.validation(ErrorCode.VALIDATION_FAILED, REGISTER_SIGNATURE_MESSAGE, {
          details: [{ path: "/signedMessage", message: "does not sign a valid message for this address" }],
        });

      let address: string;
      if (text === undefined || text === LEGACY_REGISTER_MESSAGE) {
        if (!settings.legacyMessages) {
          throw invalidFields([
            { path: "/message", message: "must be an EIP-4361 (Sign-In with Ethereum) message" },
          ]);
        }
        const recovered = recoverSigner(LEGACY_REGISTER_MESSAGE, signature);
        if (!recovered) throw badSignature();
        address = recovered;
        await rateLimiter.hit("register", address, settings.rateLimits.registerPerHour, 3600);
      } else {
        let siwe: SiweMessage;
        try {
          siwe = parseSiweMessage(text);
        } catch (error) {
          throw invalidFields([
            { path: "/message", message: `is not an EIP-4361 message: ${(error as Error).message}` },
          ]);
        }
        address = siwe.address;
        await rateLimiter.hit("register", address, settings.rateLimits.registerPerHour, 3600);
        const nonce = await nonces.take(address);
        if (nonce === undefined) throw badSignature();
        const problem = checkSiweMessage(siwe, siweExpectations(nonce, address));
        if (problem) {
          ctx.log.info({ reason: problem, address }, "register refused: EIP-4361 check failed");
          throw badSignature();
        }
        if (!(await isSignedBy(address, text, signature, chain))) throw badSignature();
      }

      let userId: number;
      let resend = false;
      try {
        const created = await bus.call(
          UsersRpc.register,
          { address, ...fields, pendingUntil: new Date(Date.now() + verificationTtlMs).toISOString() },
          callOptions(ctx),
        );
        userId = created.userId;
      } catch (error) {
        if (!(isAppError(error) && error.kind === "conflict" && SIGN_UP_CONFLICTS.has(error.code)))
          throw error;
        // The owner of the address signing up again with the same e-mail before verifying: re-send.
        const existing = await bus.call(UsersRpc.byAddress, { address }, callOptions(ctx));
        const sameMail = existing?.mailAddress?.toLowerCase() === fields.mailAddress.toLowerCase();
        if (!existing || existing.isVerified || !sameMail) throw error;
        userId = existing.id;
        resend = true;
      }

      let entry: VerificationEntry;
      let token: string;
      try {
        [entry, token] = await deps.em().transactional(async (em) => {
          // A re-sent link keeps the sign-up's deadline: the users service frees the data at that time.
          const expiresAt =
            (resend ? await pendingExpiryOf(em, userId) : undefined) ??
            new Date(Date.now() + verificationTtlMs);
          if (!resend) {
            const event = { userId, address };
            await enqueue(sqlExecutorOf(em), AuthEvents.registered, event, {
              schema: "auth",
              requestId: ctx.requestId,
            });
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
      ctx.log.info({ userId, resend, mailed }, resend ? "verification mail re-sent" : "user registered");
      return String(userId);
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
      const account = await bus.call(
        UsersRpc.markVerified,
        { userId: entry.userId, mailAddress: entry.mailAddress },
        callOptions(ctx),
      );
      try {
        await deps.em().transactional(async (em) => {
          // Two clicks at once: only the one that marks the token publishes the event.
          if (!(await markUsed(em, entry.id, new Date()))) return;
          await enqueue(
            sqlExecutorOf(em),
            AuthEvents.verified,
            { userId: account.id, address: account.address },
            { schema: "auth", requestId: ctx.requestId },
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
