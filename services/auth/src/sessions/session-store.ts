import type { UserRole } from "@fundraise/protocol";
import type { Redis } from "ioredis";
import { execAll } from "./redis-exec.ts";

/**
 * The session hash the gateway reads on every authenticated request: `<prefix>session:<userId>` with
 * `role` (the current role; overrides the token's claim) and `revokedBefore` (epoch seconds; tokens with
 * an older `iat` are refused). Every write extends the hash's life to one token lifetime (+1 min): no
 * token that the hash must govern outlives it, and nothing lingers for users who stopped signing in.
 */
export interface SessionStore {
  setRole(userId: number, role: UserRole): Promise<void>;
  /** Refuses every token issued before now (rounded up to the second); drops the role when given null. */
  revoke(userId: number, role: UserRole | null): Promise<void>;
}

export function createSessionStore(redis: Redis, prefix: string, tokenTtlSeconds: number): SessionStore {
  const key = (userId: number) => `${prefix}session:${userId}`;
  const ttl = tokenTtlSeconds + 60;
  return {
    async setRole(userId, role) {
      await execAll(redis.multi().hset(key(userId), "role", role).expire(key(userId), ttl));
    },
    async revoke(userId, role) {
      const k = key(userId);
      // Rounded up: a token issued earlier in this second (iat = floor) is refused too.
      const revokedBefore = String(Math.ceil(Date.now() / 1000));
      const tx = redis.multi().hset(k, "revokedBefore", revokedBefore);
      if (role === null) tx.hdel(k, "role");
      else tx.hset(k, "role", role);
      await execAll(tx.expire(k, ttl));
    },
  };
}
