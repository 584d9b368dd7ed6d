import { randomInt } from "node:crypto";
import type { Redis } from "ioredis";
import { defineScript } from "../sessions/redis-exec.ts";
import { COUNT_LUA, type Counters, rateLimited, redisUnavailable } from "./rate-limiter.ts";

export interface NonceStore {
  /**
   * A fresh nonce for the address, living `ttlSeconds`, counted against the rate limits' `counters` in
   * the same Redis command: past a limit nothing is issued (no earlier nonce is displaced) and it throws
   * `rate_limited` (429). Earlier nonces of the address stay valid (several may be outstanding,
   * rules.md §2.3, §7.3); past `maxPerAddress` live ones, one is dropped: the oldest issued to the same client
   * IP when there is one, else the oldest of all.
   */
  issue(address: string, ip: string, within: Counters): Promise<number>;
  /** Removes this live nonce of the address; true when it was there (a nonce is used at most once). */
  take(address: string, nonce: string): Promise<boolean>;
  /** The address's live nonces, newest first (read only: `take` decides who uses one). */
  live(address: string): Promise<number[]>;
}

// Nonces have at least 8 digits, the shortest nonce EIP-4361 allows, so one number serves both the legacy
// `LOGIN: <nonce>` text and a SIWE message; still a non-negative 32-bit int (the interface's int type).
const MIN_NONCE = 10_000_000;
const MAX_NONCE_EXCLUSIVE = 2 ** 31;
const NONCE = /^\d{8,10}$/;

// One sorted set per address: member `<nonce>|<client ip>`, score = expiry (epoch ms). Every script first
// drops the expired members, so a member present is a live nonce. The key itself expires with its newest
// member. Scripts run atomically: two logins cannot both take one nonce.
//
// ISSUE: KEYS[2..]: rate-limit counters, ARGV[6..]: their life and limit (COUNT_LUA); -1 past a limit.
const ISSUE = `${COUNT_LUA}
if over_limit(2, #KEYS - 1, 6) then return -1 end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
local max = tonumber(ARGV[5])
if #members >= max then
  local suffix = '|' .. ARGV[4]
  local drop = {}
  for _, m in ipairs(members) do
    if string.sub(m, -#suffix) == suffix then table.insert(drop, m) end
  end
  local others = {}
  for _, m in ipairs(members) do
    if string.sub(m, -#suffix) ~= suffix then table.insert(others, m) end
  end
  for _, m in ipairs(others) do table.insert(drop, m) end
  for i = 1, #members - max + 1 do redis.call('ZREM', KEYS[1], drop[i]) end
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3] .. '|' .. ARGV[4])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return 1
`;

const TAKE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local prefix = ARGV[2] .. '|'
for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(m, 1, #prefix) == prefix then
    redis.call('ZREM', KEYS[1], m)
    return 1
  end
end
return 0
`;

/** Nonces in Redis under `<prefix>nonce:<lower-case address>` (see above). */
export function createNonceStore(
  redis: Redis,
  prefix: string,
  options: { ttlSeconds: number; maxPerAddress: number },
): NonceStore {
  const key = (address: string) => `${prefix}nonce:${address.toLowerCase()}`;
  const issueScript = defineScript(redis, ISSUE);
  const takeScript = defineScript(redis, TAKE);
  const run = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (cause) {
      throw redisUnavailable(cause);
    }
  };
  return {
    async issue(address, ip, within) {
      const nonce = randomInt(MIN_NONCE, MAX_NONCE_EXCLUSIVE);
      const now = Date.now();
      const args = [now, now + options.ttlSeconds * 1000, nonce, ip, options.maxPerAddress, ...within.args];
      const issued = await run(() => issueScript([key(address), ...within.keys], args));
      if (Number(issued) === -1) throw rateLimited();
      return nonce;
    },
    async take(address, nonce) {
      if (!NONCE.test(nonce)) return false;
      const taken = await run(() => takeScript([key(address)], [Date.now(), nonce]));
      return Number(taken) === 1;
    },
    async live(address) {
      const members = await run(() => redis.zrangebyscore(key(address), `(${Date.now()}`, "+inf"));
      return members
        .map((m) => m.slice(0, m.indexOf("|")))
        .filter((n) => NONCE.test(n))
        .map(Number)
        .reverse();
    },
  };
}
