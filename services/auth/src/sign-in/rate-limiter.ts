import { ErrorCode, errors } from "@fundraise/protocol";
import type { Redis } from "ioredis";
import { defineScript } from "../sessions/redis-exec.ts";
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
// KEYS: the counters; ARGV[i]: the life of KEYS[i] in seconds. Answers the counts, in order.
const HIT = `
local counts = {}
for i, key in ipairs(KEYS) do
  counts[i] = redis.call('INCR', key)
  if counts[i] == 1 then redis.call('EXPIRE', key, ARGV[i]) end
end
return counts
`;

// Takes one call back from each counter that still exists (a counter whose window ended is not revived
// without an expiry).
const REFUND = `
for _, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then redis.call('DECR', key) end
end
return 0
`;

export function createRateLimiter(redis: Redis, prefix: string): RateLimiter {
  const hitScript = defineScript(redis, HIT);
  const refundScript = defineScript(redis, REFUND);
  return {
    async hit(limits) {
      const now = Date.now() / 1000;
      const keys = limits.map(
        (l) => `${prefix}rate:${l.action}:${l.subject.toLowerCase()}:${Math.floor(now / l.windowSeconds)}`,
      );
      let counts: number[];
      try {
        counts = (await hitScript(
          keys,
          limits.map((l) => l.windowSeconds + 1),
        )) as number[];
      } catch (cause) {
        throw redisUnavailable(cause);
      }
      if (limits.some((l, i) => (counts[i] ?? 0) > l.limit)) {
        throw errors.rateLimited(ErrorCode.RATE_LIMITED, "Too many attempts; try again later.");
      }
      return {
        async refund() {
          try {
            await refundScript(keys, []);
          } catch {
            // A refund lost to a Redis error only makes the limit a little stricter for this window.
          }
        },
      };
    },
  };
}
