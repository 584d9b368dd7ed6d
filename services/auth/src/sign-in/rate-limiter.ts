import { ErrorCode, errors } from "@fundraise/protocol";
import type { Redis } from "ioredis";
import { execAll } from "../sessions/redis-exec.ts";
import { redisUnavailable } from "./nonce-store.ts";

/** One counter: `subject` may make `limit` calls of `action` per window of `windowSeconds`. */
export interface Limit {
  action: string;
  subject: string;
  limit: number;
  windowSeconds: number;
}

export interface RateLimiter {
  /**
   * Counts one call against every limit at once; throws `rate_limited`/RATE_LIMITED (429) when any of them
   * is past its limit. Resolves to `refund`, which takes the call back (a sign-in that succeeded is not a
   * failure to count).
   */
  hit(limits: Limit[]): Promise<{ refund(): Promise<void> }>;
}

/** Subjects are never an address alone: that would let anyone lock its owner out (behaviour.md §7). */
export const ipSubject = (ip: string) => `ip:${ip}`;
export const ipAddressSubject = (ip: string, address: string) => `ip:${ip}|${address.toLowerCase()}`;

/**
 * Fixed-window counters in Redis, `<prefix>rate:<action>:<subject>:<window>`, expiring with their window.
 * Per client IP and per IP + address, on top of the gateway's per-IP limits. Unlike the gateway, Redis
 * errors are not skipped: the nonces the same calls need live in Redis too, so the call answers 503 either way.
 */
export function createRateLimiter(redis: Redis, prefix: string): RateLimiter {
  return {
    async hit(limits) {
      const now = Date.now() / 1000;
      const keys = limits.map(
        (l) => `${prefix}rate:${l.action}:${l.subject.toLowerCase()}:${Math.floor(now / l.windowSeconds)}`,
      );
      let counts: number[];
      try {
        const multi = redis.multi();
        limits.forEach((l, i) => {
          const key = keys[i] as string;
          multi.incr(key).expire(key, l.windowSeconds + 1);
        });
        const results = await execAll(multi);
        counts = limits.map((_, i) => Number(results[2 * i]));
      } catch (cause) {
        throw redisUnavailable(cause);
      }
      if (limits.some((l, i) => (counts[i] ?? 0) > l.limit)) {
        throw errors.rateLimited(ErrorCode.RATE_LIMITED, "Too many attempts; try again later.");
      }
      return {
        async refund() {
          try {
            const multi = redis.multi();
            for (const key of keys) multi.decr(key);
            await execAll(multi);
          } catch {
            // A refund lost to a Redis error only makes the limit a little stricter for this window.
          }
        },
      };
    },
  };
}
