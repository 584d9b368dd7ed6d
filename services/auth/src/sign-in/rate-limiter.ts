import { ErrorCode, errors } from "@fundraise/protocol";
import type { Redis } from "ioredis";
import { defineScript } from "../sessions/redis-exec.ts";

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
  /**
   * The counters of `limits` as a script of another store counts them (`COUNT_LUA`), so that the count
   * and the work it guards are one Redis command (GetNonce: count, and issue only within the limits).
   */
  counters(limits: Limit[]): Counters;
}

/** Counters for `COUNT_LUA`: their keys, the life of each in seconds, and each one's limit. */
export interface Counters {
  keys: string[];
  args: number[];
}

/**
 * Lua: `over_limit(first, n, arg)` counts one call on KEYS[first .. first + n - 1], whose life and limit
 * are ARGV[arg + 2i] and ARGV[arg + 2i + 1]; a counter's first call sets its expiry. True when any is past
 * its limit. The one definition of counting, for the limiter's own script and for scripts that guard
 * work with it.
 */
export const COUNT_LUA = `
local function over_limit(first, n, arg)
  local over = false
  for i = 0, n - 1 do
    local key = KEYS[first + i]
    local count = redis.call('INCR', key)
    if count == 1 then redis.call('EXPIRE', key, ARGV[arg + 2 * i]) end
    if count > tonumber(ARGV[arg + 2 * i + 1]) then over = true end
  end
  return over
end
`;

export const redisUnavailable = (cause: unknown) =>
  errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, "Sign-in is unavailable right now; try again.", {
    cause,
  });

export const rateLimited = () =>
  errors.rateLimited(ErrorCode.RATE_LIMITED, "Too many attempts; try again later.");

/** Subjects are never an address alone: that would let anyone lock its owner out (rules.md §7.3). */
export const ipSubject = (ip: string) => `ip:${ip}`;
export const ipAddressSubject = (ip: string, address: string) => `ip:${ip}|${address.toLowerCase()}`;

/**
 * Fixed-window counters in Redis, `<prefix>rate:<action>:<subject>:<window>`, expiring with their window.
 * Per client IP and per IP + address, on top of the gateway's per-IP limits. Unlike the gateway, Redis
 * errors are not skipped: the nonces the same calls need live in Redis too, so the call answers 503 either way.
 */
// KEYS: the counters; ARGV: life, limit of each. Answers 1 when a counter is past its limit.
const HIT = `${COUNT_LUA}
return over_limit(1, #KEYS, 1) and 1 or 0
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
  const counters = (limits: Limit[]): Counters => {
    const now = Date.now() / 1000;
    const window = (l: Limit) => Math.floor(now / l.windowSeconds);
    return {
      keys: limits.map((l) => `${prefix}rate:${l.action}:${l.subject.toLowerCase()}:${window(l)}`),
      args: limits.flatMap((l) => [l.windowSeconds + 1, l.limit]),
    };
  };
  return {
    counters,
    async hit(limits) {
      const { keys, args } = counters(limits);
      let over: unknown;
      try {
        over = await hitScript(keys, args);
      } catch (cause) {
        throw redisUnavailable(cause);
      }
      if (Number(over) === 1) throw rateLimited();
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
