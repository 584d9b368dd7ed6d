import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from "@fastify/rate-limit";
import type { Redis } from "ioredis";
import type { Logger } from "pino";

interface Count {
  current: number;
  ttl: number;
}

/** One key's window, as far as this gateway knows it. */
interface Window {
  /** The count in Redis at its last answer (this gateway's increments included up to then). */
  shared: number;
  /** Counted here, sent to Redis, not answered yet. */
  inFlight: number;
  /** Counted here, not sent yet. */
  pending: number;
  resetAt: number;
  /** The window's length, for Redis to expire the count. */
  windowMs: number;
}

// Adds n to the key's count; the first increment of a window starts its expiry. Answers count and ms left.
const ADD = `
local current = redis.call('INCRBY', KEYS[1], ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
return {current, ttl}`;

type AddCommand = (key: string, n: number, windowMs: number) => Promise<[number, number]>;

export interface BatchedStoreOptions {
  redis: Redis;
  /** Key prefix in Redis. */
  prefix: string;
  log: Logger;
  /** How often counts made below half the limit go to Redis (default 100 ms). */
  flushMs?: number;
}

/**
 * A rate-limit store that counts in Redis without a Redis round trip on every request. A request below
 * half its key's limit is counted here and sent with the others every `flushMs` (one pipelined command per
 * key); from half the limit on, each request is counted in Redis before it is answered, so the limit is
 * exact within one gateway. Across gateways, a client can pass its limit by what it sends to the others
 * within one flush interval, which the others have not reported yet. The store the plugin ships does a
 * round trip per request: the largest single cost of an anonymous read at the gateway
 * (docs/adr/0008-gateway-sessions-and-edge.md). Redis errors fail the request's count, and the plugin's
 * `skipOnError` lets it through, as before.
 */
export function batchedRedisStore(options: BatchedStoreOptions): FastifyRateLimitStoreCtor {
  const { redis, log } = options;
  const flushMs = options.flushMs ?? 100;
  redis.defineCommand("rateLimitAdd", { numberOfKeys: 1, lua: ADD });
  const add = (redis as unknown as { rateLimitAdd: AddCommand }).rateLimitAdd.bind(redis);
  const windows = new Map<string, Window>();
  let flushScheduled = false;

  /** Sends `n` counted increments of a key and takes Redis's count back. */
  async function send(key: string, window: Window, n: number): Promise<number> {
    window.inFlight += n;
    try {
      // Answers come back in the order sent (one connection): this count includes every earlier send.
      const [count, ttl] = await add(key, n, window.windowMs);
      window.shared = count;
      window.resetAt = Date.now() + Number(ttl);
      return count;
    } catch (error) {
      window.pending += n; // counted again at the next flush
      throw error;
    } finally {
      window.inFlight -= n;
    }
  }

  function flush(): void {
    flushScheduled = false;
    const now = Date.now();
    for (const [key, window] of windows) {
      if (window.pending === 0) {
        if (window.inFlight === 0 && window.resetAt <= now) windows.delete(key);
        continue;
      }
      const n = window.pending;
      window.pending = 0;
      send(key, window, n).catch((err: unknown) => {
        log.debug({ err }, "rate-limit counts not sent to Redis; they go with the next flush");
      });
    }
  }

  class BatchedRedisStore implements FastifyRateLimitStore {
    // The plugin constructs the store with its options, which the closure already holds.
    constructor(
      _pluginOptions?: unknown,
      private readonly keyPrefix = options.prefix,
    ) {}

    incr(ip: string, done: (error: Error | null, result?: Count) => void, timeWindow: number, max: number) {
      const key = this.keyPrefix + ip;
      const now = Date.now();
      let window = windows.get(key);
      if (!window || (window.resetAt <= now && window.inFlight === 0)) {
        window = { shared: 0, inFlight: 0, pending: 0, resetAt: now + timeWindow, windowMs: timeWindow };
        windows.set(key, window);
      }
      window.pending += 1;
      const estimate = window.shared + window.inFlight + window.pending;
      if (estimate * 2 <= max) {
        if (!flushScheduled) {
          flushScheduled = true;
          setTimeout(flush, flushMs).unref();
        }
        done(null, { current: estimate, ttl: Math.max(window.resetAt - now, 0) });
        return;
      }
      const n = window.pending;
      window.pending = 0;
      const counted = window;
      send(key, counted, n).then(
        (count) => done(null, { current: count, ttl: Math.max(counted.resetAt - Date.now(), 0) }),
        (error: Error) => done(error),
      );
    }

    // The plugin passes the route's merged limit options, the route under `routeInfo` (its own stores
    // read it there too); its type declaration says otherwise.
    child(routeOptions: Parameters<FastifyRateLimitStore["child"]>[0]): FastifyRateLimitStore {
      const route = (routeOptions as unknown as { routeInfo?: { method?: unknown; url?: unknown } })
        .routeInfo;
      return new BatchedRedisStore(
        undefined,
        `${this.keyPrefix}${String(route?.method)}${String(route?.url)}-`,
      );
    }
  }
  return BatchedRedisStore;
}
