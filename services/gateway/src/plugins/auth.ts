import {
  type Caller,
  Caller as CallerSchema,
  ErrorCode,
  errors,
  roleInSession,
  SESSION_VERSION_CLAIM,
  type SessionState,
  sessionRefusal,
  type UserRole,
  validatorOf,
} from "@fundraise/protocol";
import type { FastifyRequest } from "fastify";
import { createLocalJWKSet, type JSONWebKeySet, errors as joseErrors, jwtVerify } from "jose";
import type { Static } from "typebox";
import type { Server } from "../server.ts";
import { bearerOf } from "./bearer.ts";

/** Who may call a route: anyone (a token is used when valid), any signed-in user, or these roles. */
export type Access = "anonymous" | "signed-in" | readonly UserRole[];

declare module "fastify" {
  interface FastifyRequest {
    caller: Static<typeof CallerSchema> | null;
  }
  interface FastifyContextConfig {
    access?: Access;
  }
}

/** What the platform currently knows about a user's session (role, revocation), kept by the auth service. */
export interface SessionStore {
  get(userId: number): Promise<SessionState>;
}

/** A verified token: its caller as the session now has it, and what a long-lived stream re-checks. */
export interface VerifiedToken {
  caller: Caller;
  /** The account version the token was issued at (its `sv` claim; 0 without one). */
  tokenVersion: number;
  /** Epoch ms of its expiry; null for a token without one. */
  expiresAt: number | null;
}

export interface TokenVerifier {
  verify(token: string): Promise<Caller>;
  inspect(token: string): Promise<VerifiedToken>;
}

/** Why a session refuses a token, as the 401 a request gets; null when it still speaks for the account. */
export function sessionError(session: SessionState, tokenVersion: number) {
  const refusal = sessionRefusal(session, tokenVersion);
  if (refusal === "deleted") {
    return errors.unauthenticated(ErrorCode.TOKEN_REVOKED, "This account no longer exists.");
  }
  if (refusal === "revoked") {
    return errors.unauthenticated(ErrorCode.TOKEN_REVOKED, "This token is no longer valid; sign in again.");
  }
  return null;
}

const ALGORITHMS = ["ES256", "EdDSA"];
const JWKS_REFRESH_MIN_INTERVAL_MS = 10_000;

/**
 * Verifies access tokens against the auth service's JWKS, fetched through `getJwks` and cached; an
 * unknown `kid` (a rotated key) refetches at most every 10 s. Then applies the session state.
 */
export function createTokenVerifier(deps: {
  getJwks: () => Promise<JSONWebKeySet>;
  issuer: string;
  audience: string;
  sessions: SessionStore;
}): TokenVerifier {
  let keySet: ReturnType<typeof createLocalJWKSet> | undefined;
  let fetchedAt = 0;
  let fetching: Promise<void> | undefined;

  const refresh = (force: boolean) => {
    if (!force && keySet) return Promise.resolve();
    if (force && Date.now() - fetchedAt < JWKS_REFRESH_MIN_INTERVAL_MS) return Promise.resolve();
    fetching ??= deps
      .getJwks()
      .then((jwks) => {
        keySet = createLocalJWKSet(jwks);
        fetchedAt = Date.now();
      })
      .finally(() => {
        fetching = undefined;
      });
    return fetching;
  };

  const verifyOnce = async (token: string) => {
    if (!keySet) throw errors.unauthenticated(ErrorCode.TOKEN_INVALID, "No signing keys are known.");
    const { payload } = await jwtVerify(token, keySet, {
      issuer: deps.issuer,
      audience: deps.audience,
      algorithms: ALGORITHMS,
    });
    return payload;
  };

  async function inspect(token: string): Promise<VerifiedToken> {
    await refresh(false);
    let payload: Awaited<ReturnType<typeof verifyOnce>>;
    try {
      payload = await verifyOnce(token);
    } catch (error) {
      if (!(error instanceof joseErrors.JWKSNoMatchingKey)) throw invalidToken(error);
      await refresh(true);
      payload = await verifyOnce(token).catch((e: unknown) => {
        throw invalidToken(e);
      });
    }
    const caller = {
      userId: Number(payload.sub),
      username: payload.unique_name,
      address: payload.address,
      role: payload.role,
    };
    if (!validatorOf(CallerSchema).check(caller)) {
      throw errors.unauthenticated(ErrorCode.TOKEN_INVALID, "The token's claims are incomplete.");
    }
    // The account's state now, not the token's: a deletion or an admin's change made after the token
    // was issued (at a higher account version) refuses it.
    const session = await deps.sessions.get(caller.userId);
    const sv = payload[SESSION_VERSION_CLAIM];
    const tokenVersion = typeof sv === "number" ? sv : 0;
    const refused = sessionError(session, tokenVersion);
    if (refused) throw refused;
    caller.role = roleInSession(session, caller.role);
    return { caller, tokenVersion, expiresAt: payload.exp === undefined ? null : payload.exp * 1000 };
  }

  return {
    inspect,
    verify: async (token) => (await inspect(token)).caller,
  };
}

function invalidToken(cause: unknown) {
  if (cause instanceof joseErrors.JWTExpired) {
    return errors.unauthenticated(ErrorCode.TOKEN_INVALID, "The token has expired; sign in again.", {
      cause,
    });
  }
  return errors.unauthenticated(ErrorCode.TOKEN_INVALID, "The token is not valid.", { cause });
}

/**
 * Sets `request.caller` and enforces the route's access rule: 401 without a valid token where one is
 * needed, 403 for a role the route does not admit. On anonymous routes a bad token is ignored.
 */
export function registerAuth(app: Server, verifier: TokenVerifier): void {
  app.decorateRequest("caller", null);
  // Without a promise where nothing is to be checked: a route without a rule (health, docs, metrics, not
  // found), or an anonymous request on an anonymous route, the most common request of all.
  app.addHook("onRequest", (request, _reply, done) => {
    const access = request.routeOptions.config?.access;
    if (access === undefined || (access === "anonymous" && request.headers.authorization === undefined)) {
      done();
      return;
    }
    authenticate(request, access).then(() => done(), done);
  });

  async function authenticate(request: FastifyRequest, access: Access): Promise<void> {
    const bearer = bearerOf(request);
    if (bearer.kind === "none") {
      if (access !== "anonymous") throw errors.unauthenticated(ErrorCode.TOKEN_MISSING, "Sign in first.");
      return;
    }
    if (bearer.kind === "malformed") {
      if (access === "anonymous") return;
      throw errors.unauthenticated(
        ErrorCode.TOKEN_INVALID,
        "The Authorization header must be exactly one `Bearer <token>`.",
      );
    }
    try {
      request.caller = await verifier.verify(bearer.token);
    } catch (error) {
      if (access === "anonymous") return;
      throw error;
    }
    const role = request.caller.role;
    if (Array.isArray(access) && !access.includes(role)) {
      throw errors.forbidden(ErrorCode.ROLE_FORBIDDEN, `This needs the role ${access.join(" or ")}.`);
    }
  }
}
