import { ErrorCode, errors, USER_ROLES, type UserRole } from "@fundraise/protocol";
import type { Redis } from "ioredis";
import type { SessionState, SessionStore } from "./auth.ts";

/**
 * Session state per user in one Redis hash, `<prefix>session:<userId>` with fields `role` and
 * `revokedBefore`, written by the auth service. One HGETALL per authenticated request keeps
 * demotions and deletions effective at once. Redis down: fail closed (503), since a revoked token
 * must never pass for want of a lookup.
 */
export function createRedisSessionStore(redis: Redis, prefix: string): SessionStore {
  return {
    async get(userId) {
      let fields: Record<string, string>;
      try {
        fields = await redis.hgetall(`${prefix}session:${userId}`);
      } catch (cause) {
        throw errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, "Sessions cannot be checked right now.", {
          cause,
        });
      }
      const state: SessionState = {};
      if (fields.role && (USER_ROLES as readonly string[]).includes(fields.role))
        state.role = fields.role as UserRole;
      const revokedBefore = Number(fields.revokedBefore);
      if (Number.isFinite(revokedBefore) && fields.revokedBefore !== undefined)
        state.revokedBefore = revokedBefore;
      return state;
    },
  };
}
