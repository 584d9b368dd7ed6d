import Type, { type Static } from "typebox";
import { Address, Id, Nullable, USER_ROLES, UserRole } from "./common.ts";

/**
 * The session state of a user, one Redis hash `<prefix>session:<userId>` written by the auth service (which
 * keeps the same state in Postgres) and read by the gateway on every authenticated request.
 * - `role`: the user's current role; it overrides the token's claim, so a demotion acts at once.
 * - `version`: the account version this state reflects. The users service raises an account's version on
 *   every role change and on its deletion; a write carrying an older version never replaces a newer one.
 * - `revokedBelow`: tokens whose `sv` claim (the account version they were issued at) is below it are
 *   refused (an admin's role change). Versions order a change and a sign-in exactly, with no clock.
 * - `deleted`: the account is gone; every token of it is refused.
 * A missing hash means Redis lost it: the gateway asks the auth service to rebuild it and refuses until then.
 */
export const SessionState = Type.Object({
  role: Nullable(UserRole),
  version: Type.Integer({ minimum: 0 }),
  revokedBelow: Type.Integer({ minimum: 0 }),
  deleted: Type.Boolean(),
});
export type SessionState = Static<typeof SessionState>;

/**
 * A change the users service made to an account, for the session (the `auth.session.apply` RPC, sent before
 * the change answers, and the role-changed / deleted events, which carry the same): idempotent, and ordered
 * by `version`, so a late or repeated one changes nothing.
 */
export const SessionChange = Type.Object({
  userId: Id,
  address: Address,
  /** The account's version after the change. */
  version: Type.Integer({ minimum: 1 }),
  /** The role now; null when the account is deleted. */
  role: Nullable(UserRole),
  /** An admin's change: tokens issued at an older version stop working. */
  revoke: Type.Boolean(),
  deleted: Type.Boolean(),
});
export type SessionChange = Static<typeof SessionChange>;

export const SESSION_FIELD = {
  role: "role",
  version: "version",
  revokedBelow: "revokedBelow",
  deleted: "deleted",
} as const;

/** The token claim that carries the account version a token was issued at. */
export const SESSION_VERSION_CLAIM = "sv";

export const sessionKey = (prefix: string, userId: number) => `${prefix}session:${userId}`;

const count = (raw: string | undefined) => (raw !== undefined && /^\d{1,15}$/.test(raw) ? Number(raw) : 0);

/**
 * Reads a session hash as HGETALL returns it; undefined when the hash does not exist or has no version
 * (a hash of an earlier layout: rebuilt like a lost one).
 */
export function parseSessionHash(fields: Record<string, string>): SessionState | undefined {
  if (fields[SESSION_FIELD.version] === undefined) return undefined;
  const role = fields[SESSION_FIELD.role];
  return {
    role: role !== undefined && (USER_ROLES as readonly string[]).includes(role) ? (role as UserRole) : null,
    version: count(fields[SESSION_FIELD.version]),
    revokedBelow: count(fields[SESSION_FIELD.revokedBelow]),
    deleted: fields[SESSION_FIELD.deleted] === "1",
  };
}

/**
 * The role a token's caller acts with: the session's role replaces the token's claim (a demotion acts at
 * once), and the claim stands only while the session names no role the platform knows. Every reader of a
 * session asks here: the gateway's requests and its event streams.
 */
export function roleInSession(state: SessionState, claimed: UserRole): UserRole {
  return state.role !== null && (USER_ROLES as readonly string[]).includes(state.role) ? state.role : claimed;
}

/**
 * Whether a token issued at account version `tokenVersion` (its `sv` claim; 0 for a token without one)
 * still speaks for the account: refused once the account is deleted or an admin's change revoked it.
 */
export function sessionRefusal(state: SessionState, tokenVersion: number): "deleted" | "revoked" | null {
  if (state.deleted) return "deleted";
  return tokenVersion < state.revokedBelow ? "revoked" : null;
}
