import type { Bus, RequestContext } from "@fundraise/bus";
import type { ChainRole } from "@fundraise/contracts";
import {
  type AuthRpc,
  ErrorCode,
  errors,
  type RequestOf,
  type UserAccount,
  UsersRpc,
} from "@fundraise/protocol";
import type { Static } from "typebox";
import type { ChainReader } from "../chain/chain.ts";
import type { TokenIssuer } from "../keys/token-issuer.ts";
import { type SessionStore, STALE } from "../sessions/session-store.ts";
import { refusal, type VerifySignedMessage } from "../signatures/signed-message.ts";
import type { AccountCopy } from "./account-copy.ts";
import { requireAddress } from "./input.ts";
import type { NonceStore } from "./nonce-store.ts";
import { ipAddressSubject, ipSubject, type RateLimiter } from "./rate-limiter.ts";

type Account = Static<typeof UserAccount>;
type LoginRequest = RequestOf<typeof AuthRpc.login>["login"];
/** Where a call came from (the gateway's client IP): rate limits count per IP and per IP + address. */
export type Origin = RequestOf<typeof AuthRpc.login>["origin"];

export { LOGIN_FAILED_MESSAGE } from "../signatures/signed-message.ts";
export const NOT_VERIFIED_MESSAGE = "Verify your e-mail first.";

/** Reads of an account a sign-in makes at most, when it keeps changing under it (then 503). */
const MAX_READS = 3;
const busy = (cause: unknown) =>
  errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, "Sign-in is unavailable right now; try again.", {
    cause,
  });

/** Sign-in (rules.md §2, §7): nonces, and a signed nonce exchanged for a token. */
export interface SignInService {
  issueNonce(address: string, origin: Origin): Promise<number>;
  login(request: LoginRequest, origin: Origin, ctx: RequestContext): Promise<string>;
}

export interface SignInServiceDeps {
  bus: Pick<Bus, "call">;
  /** The accounts, copied from the users service. */
  accounts: AccountCopy;
  nonces: NonceStore;
  rateLimiter: RateLimiter;
  chain: ChainReader;
  tokens: TokenIssuer;
  sessions: SessionStore;
  verifySignedMessage: VerifySignedMessage;
  limits: {
    noncePerIpPerMinute: number;
    noncePerIpAddressPerMinute: number;
    loginFailuresPerIpPerMinute: number;
    loginFailuresPerIpAddressPerMinute: number;
  };
}

export function createSignInService(deps: SignInServiceDeps): SignInService {
  const { bus, accounts, nonces, rateLimiter, chain, tokens, sessions, verifySignedMessage, limits } = deps;

  /**
   * Reads the chain role and tells the users service when the chain changed since it last saw it; the
   * users service decides whether the chain's change or an admin's is newer (rules.md §7.1).
   */
  async function refreshRole(
    account: Account,
    chainRole: Promise<ChainRole>,
    ctx: RequestContext,
  ): Promise<Account | null> {
    const role = await chainRole;
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

  async function storeSession(account: Account) {
    try {
      return await sessions.signIn(account);
    } catch (cause) {
      throw busy(cause);
    }
  }

  return {
    async issueNonce(address, origin) {
      const checked = requireAddress(address);
      // Counted and issued in one Redis command: past a limit, nothing is issued.
      const counters = rateLimiter.counters([
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
      return nonces.issue(checked, origin.ip, counters);
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
        // could otherwise lock an address's owner out (rules.md §7.3). A success is taken back below.
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

      // The chain read needs only the address: it runs while the account is looked up (in the copy, or
      // by the users service). Its failure (chain down: 503) is said only after the account checks.
      const chainRole = chain.roleOf(address);
      chainRole.catch(() => {});
      let read = await accounts.byAddress(address, ctx);
      for (let round = 1; ; round++) {
        const { account } = read;
        if (!account) throw refuse("unknown address");
        if (!account.isVerified) throw errors.forbidden(ErrorCode.EMAIL_NOT_VERIFIED, NOT_VERIFIED_MESSAGE);
        const current = await refreshRole(account, chainRole, ctx);
        if (!current) throw refuse("user removed during sign-in");
        // The gateway prefers the session's role to the claim: it must be this one before the token is
        // out, unless the session holds a newer account version (a change landed since the account was
        // read, or the account is gone): the token would then speak for a past account.
        if ((await storeSession(current)) !== STALE) {
          // Issued at the account's version: a later admin change (a higher version) revokes it, an
          // earlier one cannot.
          const { token } = await tokens.issue(current);
          // A sign-in that succeeded is not a failure: it does not count against the limits.
          await attempt.refund();
          ctx.log.info({ userId: current.id, role: current.role, version: current.version }, "signed in");
          return token;
        }
        if (round === MAX_READS) throw busy(new Error("the account kept changing during sign-in"));
        ctx.log.info({ userId: current.id }, "account changed during sign-in; reading it again");
        read = await accounts.byAddress(address, ctx, { fresh: true });
      }
    },
  };
}
