import Type, { type Static } from "typebox";
import { Nullable, USER_ROLES, UserRole } from "./common.ts";

/**
 * The session state of a user, one Redis hash `<prefix>session:<userId>` written by the auth service (which
 * keeps the same state in Postgres) and read by the gateway on every authenticated request.
 * - `role`: the user's current role; it overrides the token's claim, so a demotion acts at once.
 * - `revokedBefore`: epoch seconds; tokens with an older `iat` are refused (deletion, an admin's role change).
 * - `rebuiltAt`: set when the hash was rebuilt from Postgres, so a rebuilt hash with no other field exists.
 * A missing hash means Redis lost it: the gateway asks the auth service to rebuild it and refuses until then.
 */
export const SessionState = Type.Object({
  role: Nullable(UserRole),
  revokedBefore: Nullable(Type.Integer({ minimum: 0 })),
});
export type SessionState = Static<typeof SessionState>;

export const SESSION_FIELD = {
  role: "role",
  revokedBefore: "revokedBefore",
  rebuiltAt: "rebuiltAt",
} as const;

export const sessionKey = (prefix: string, userId: number) => `${prefix}session:${userId}`;

/** Reads a session hash as HGETALL returns it; undefined when the hash does not exist. */
export function parseSessionHash(fields: Record<string, string>): SessionState | undefined {
  if (Object.keys(fields).length === 0) return undefined;
  const role = fields[SESSION_FIELD.role];
  const revokedBefore = fields[SESSION_FIELD.revokedBefore];
  return {
    role: role !== undefined && (USER_ROLES as readonly string[]).includes(role) ? (role as UserRole) : null,
    revokedBefore:
      revokedBefore !== undefined && /^\d{1,12}$/.test(revokedBefore) ? Number(revokedBefore) : null,
  };
}
