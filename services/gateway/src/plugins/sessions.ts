import { ErrorCode, errors, parseSessionHash, type SessionState, sessionKey } from "@fundraise/protocol";
import type { Redis } from "ioredis";
import type { SessionStore } from "./auth.ts";

/**
 * Session state per user, read from the Redis hash the auth service writes (packages/protocol
 * `sessions.ts`): one HGETALL per authenticated request keeps demotions and deletions effective at once.
 * A missing hash means Redis lost it (a restart without persistence): `rebuild` asks the auth service to
 * restore it from Postgres. Redis or the rebuild failing: 503, since a revoked token must never pass for
 * want of a lookup (fail closed).
 */
export function createRedisSessionStore(deps: {
  redis: Redis;
  prefix: string;
  rebuild: (userId: number) => Promise<SessionState>;
}): SessionStore {
  const unavailable = (cause: unknown) =>
    errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, "Sessions cannot be checked right now.", { cause });
  return {
    async get(userId) {
      let fields: Record<string, string>;
      try {
        fields = await deps.redis.hgetall(sessionKey(deps.prefix, userId));
      } catch (cause) {
        throw unavailable(cause);
      }
      const state = parseSessionHash(fields);
      if (state) return state;
      try {
        return await deps.rebuild(userId);
      } catch (cause) {
        throw unavailable(cause);
      }
    },
  };
}
