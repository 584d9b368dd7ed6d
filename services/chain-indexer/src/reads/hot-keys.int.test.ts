import { randomBytes } from "node:crypto";
import { silentLogger } from "@fundraise/service-kit";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createHotKeys } from "./hot-keys.ts";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const redis = new Redis(REDIS_URL);
const prefixes: string[] = [];

afterAll(async () => {
  for (const prefix of prefixes) {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  }
  redis.disconnect();
});

function cache(client: Redis = redis) {
  const prefix = `test:hot:${randomBytes(4).toString("hex")}:`;
  prefixes.push(prefix);
  const hotKeys = createHotKeys({
    redis: client,
    prefix,
    chainId: 31337,
    log: silentLogger(),
    ttlMs: 60_000,
  });
  return { hotKeys, answers: `${prefix}chain:31337:answers`, indexed: `${prefix}chain:31337:indexed` };
}

/** A read of Postgres as the chain reads do it: counts its calls, answers at a given cursor. */
function source(at: () => number, value: () => boolean) {
  const calls = { n: 0 };
  const compute = async () => {
    calls.n += 1;
    return { whitelisted: value(), indexedBlock: at() };
  };
  return { calls, compute };
}

/** Waits until the reader's store (not awaited by the read) has put the key's answer into Redis. */
const stored = (answers: string, key: string) =>
  expect.poll(() => redis.hget(answers, key), { interval: 5 }).not.toBeNull();
/**
 * Deliberate: a store the reader must not make would land within this time, so a key still missing after
 * it was not stored (there is nothing that happens to poll for).
 */
const noStoreWithin = () => new Promise((resolve) => setTimeout(resolve, 50));

describe("the chain-read cache in Redis", () => {
  it("answers a repeated read from Redis, with the cursor the writer last set", async () => {
    const { hotKeys, answers } = cache();
    await hotKeys.advance(10, true);
    const { calls, compute } = source(
      () => 10,
      () => true,
    );
    expect(await hotKeys.read("whitelisted:0xA", compute)).toEqual({ whitelisted: true, indexedBlock: 10 });
    await stored(answers, "whitelisted:0xA");
    expect(await hotKeys.read("whitelisted:0xA", compute)).toEqual({ whitelisted: true, indexedBlock: 10 });
    expect(calls.n).toBe(1);
    // The cursor moves without a change of logs: the answer stands, and says the new block.
    await hotKeys.advance(12, false);
    expect(await hotKeys.read("whitelisted:0xA", compute)).toEqual({ whitelisted: true, indexedBlock: 12 });
    expect(calls.n).toBe(1);
  });

  it("forgets every answer when the writer's commit changed the logs", async () => {
    const { hotKeys, answers } = cache();
    let value = false;
    let cursor = 5;
    const { calls, compute } = source(
      () => cursor,
      () => value,
    );
    await hotKeys.advance(cursor, true);
    expect((await hotKeys.read("whitelisted:0xB", compute)).whitelisted).toBe(false);
    await stored(answers, "whitelisted:0xB");
    value = true;
    cursor = 6;
    await hotKeys.advance(cursor, true);
    expect(await hotKeys.read("whitelisted:0xB", compute)).toEqual({ whitelisted: true, indexedBlock: 6 });
    expect(calls.n).toBe(2);
  });

  it("never stores an answer read at a cursor the writer has since moved", async () => {
    const { hotKeys, answers } = cache();
    await hotKeys.advance(20, true);
    // The writer commits a change while the reader is in Postgres with the old cursor.
    const slow = async () => {
      await hotKeys.advance(21, true);
      return { whitelisted: false, indexedBlock: 20 };
    };
    expect(await hotKeys.read("whitelisted:0xC", slow)).toEqual({ whitelisted: false, indexedBlock: 20 });
    await noStoreWithin();
    expect(await redis.hget(answers, "whitelisted:0xC")).toBeNull();
  });

  it("keeps nothing before the writer has set its cursor, and lets every key expire", async () => {
    const { hotKeys, answers, indexed } = cache();
    const { calls, compute } = source(
      () => 3,
      () => true,
    );
    await hotKeys.read("whitelisted:0xD", compute);
    await noStoreWithin();
    expect(await redis.exists(answers)).toBe(0);
    await hotKeys.advance(3, false);
    await hotKeys.read("whitelisted:0xD", compute);
    await stored(answers, "whitelisted:0xD");
    expect(calls.n).toBe(2);
    expect(await redis.pttl(indexed)).toBeGreaterThan(0);
    expect(await redis.pttl(answers)).toBeGreaterThan(0);
  });

  it("answers from Postgres when Redis cannot be reached; the writer's report fails for it to retry", async () => {
    const down = new Redis("redis://127.0.0.1:1", {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    down.on("error", () => {});
    try {
      const { hotKeys } = cache(down);
      const { calls, compute } = source(
        () => 7,
        () => true,
      );
      expect(await hotKeys.read("whitelisted:0xE", compute)).toEqual({ whitelisted: true, indexedBlock: 7 });
      expect(await hotKeys.read("whitelisted:0xE", compute)).toEqual({ whitelisted: true, indexedBlock: 7 });
      expect(calls.n).toBe(2);
      await expect(hotKeys.advance(7, true)).rejects.toThrow();
    } finally {
      down.disconnect();
    }
  });
});
