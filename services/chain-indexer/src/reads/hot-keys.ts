import type { Logger } from "@fundraise/service-kit";
import type { Redis } from "ioredis";

/**
 * Chain-read answers kept in Redis, never staler than the block they say. Two keys per chain:
 *
 * - `indexed`: the cursor, set by the one writer after each commit (and refreshed while idle);
 * - `answers`: a hash of answers by read and argument, deleted by the writer in the same MULTI as the
 *   cursor whenever a commit stored logs or a reorg removed some (a commit that only moves the cursor
 *   changes no answer).
 *
 * A read is one round trip (both keys); a hit answers with the cursor in Redis as its `indexedBlock`.
 * A miss reads Postgres (the cursor first) and stores the answer only while Redis's cursor is still the
 * one it read: a slow reader can never put an answer back after the writer invalidated it. Both keys
 * expire (`ttlMs`), so a writer that lost Redis leaves no answer stale for longer than that. Redis
 * trouble costs speed, never an answer: reads fall back to Postgres.
 */
export interface HotKeys {
  /** The cached answer of `field`, or `compute`'s (Postgres) answer, kept for the next reader. */
  read<T extends { indexedBlock: number }>(field: string, compute: () => Promise<T>): Promise<T>;
  /** The writer committed up to `cursor`; `changed`: logs were stored or removed. */
  advance(cursor: number, changed: boolean): Promise<void>;
}

// KEYS: indexed, answers. ARGV: field. Answers the cursor and the field's answer (either may be nil).
const READ = `return {redis.call('GET', KEYS[1]), redis.call('HGET', KEYS[2], ARGV[1])}`;

// KEYS: indexed, answers. ARGV: cursor read, field, answer, ttl. Stores only at an unchanged cursor.
const STORE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
if redis.call('PTTL', KEYS[2]) < 0 then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
return 1`;

export function createHotKeys(options: {
  redis: Redis;
  prefix: string;
  chainId: number;
  log: Logger;
  ttlMs?: number;
}): HotKeys {
  const { redis, log } = options;
  const ttlMs = options.ttlMs ?? 30_000;
  const indexedKey = `${options.prefix}chain:${options.chainId}:indexed`;
  const answersKey = `${options.prefix}chain:${options.chainId}:answers`;
  let warned = false;
  const trouble = (err: unknown, what: string) => {
    // Once per outage: a read path that logs on every call would flood while Redis is away.
    if (!warned) log.warn({ err }, `chain-read cache: ${what}; answering from Postgres`);
    warned = true;
  };

  return {
    async read(field, compute) {
      let cached: [string | null, string | null] | undefined;
      try {
        cached = (await redis.eval(READ, 2, indexedKey, answersKey, field)) as [string | null, string | null];
        warned = false;
      } catch (err) {
        trouble(err, "read failed");
      }
      if (cached?.[0] != null && cached[1] != null) {
        return { ...JSON.parse(cached[1]), indexedBlock: Number(cached[0]) };
      }
      const answer = await compute();
      if (cached?.[0] != null) {
        redis
          .eval(
            STORE,
            2,
            indexedKey,
            answersKey,
            String(answer.indexedBlock),
            field,
            JSON.stringify(answer),
            ttlMs,
          )
          .catch((err: unknown) => trouble(err, "store failed"));
      }
      return answer;
    },

    async advance(cursor, changed) {
      const tx = redis.multi().set(indexedKey, String(cursor), "PX", ttlMs);
      if (changed) tx.del(answersKey);
      const results = await tx.exec();
      const failed = results?.find(([error]) => error);
      if (!results || failed) throw new Error("chain-read cache not updated", { cause: failed?.[0] });
    },
  };
}
