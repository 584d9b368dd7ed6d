import { ErrorCode, errors } from "@fundraise/protocol";
import type { Redis } from "ioredis";
import { execAll } from "../sessions/redis-exec.ts";
import { redisUnavailable } from "./nonce-store.ts";

export interface RateLimiter {
  /** Counts one call for `subject`; throws `rate_limited`/RATE_LIMITED (429) past the limit. */
  hit(action: string, subject: string, limit: number, windowSeconds: number): Promise<void>;
}

/**
 * Fixed-window counters in Redis, `<prefix>rate:<action>:<subject>:<window>`, expiring with their window.
 * Per address, on top of the gateway's per-IP limits. Unlike the gateway, Redis errors are not skipped:
 * the nonces the same calls need live in Redis too, so the call answers 503 either way.
 */
export function createRateLimiter(redis: Redis, prefix: string): RateLimiter {
  return {
    async hit(action, subject, limit, windowSeconds) {
      const window = Math.floor(Date.now() / 1000 / windowSeconds);
      const key = `${prefix}rate:${action}:${subject.toLowerCase()}:${window}`;
      let count: number;
      try {
        const [incremented] = await execAll(
          redis
            .multi()
            .incr(key)
            .expire(key, windowSeconds + 1),
        );
        count = Number(incremented);
      } catch (cause) {
        throw redisUnavailable(cause);
      }
      if (count > limit) {
        throw errors.rateLimited(
          ErrorCode.RATE_LIMITED,
          "Too many attempts for this address; try again later.",
        );
      }
    },
  };
}
