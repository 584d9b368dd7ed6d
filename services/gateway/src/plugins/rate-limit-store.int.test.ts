import { randomBytes } from "node:crypto";
import { waitFor } from "@fundraise/bus/testing";
import { silentLogger } from "@fundraise/service-kit";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { batchedRedisStore } from "./rate-limit-store.ts";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const redis = new Redis(REDIS_URL);
const prefix = `test:rl:${randomBytes(4).toString("hex")}:`;
const WINDOW = 60_000;

afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

/** One gateway's store (the plugin builds one per process), flushing every 5 ms. */
function gatewayStore(client: Redis = redis) {
  const Store = batchedRedisStore({ redis: client, prefix, log: silentLogger(), flushMs: 5 });
  return new Store({} as never);
}

function incr(store: ReturnType<typeof gatewayStore>, ip: string, max: number) {
  return new Promise<{ current: number; ttl: number }>((resolve, reject) =>
    store.incr(ip, (error, result) => (error ? reject(error) : resolve(result!)), WINDOW, max),
  );
}

const counted = async (ip: string) => Number((await redis.get(`${prefix}${ip}`)) ?? 0);

describe("batchedRedisStore: rate-limit counts in Redis without a round trip per request", () => {
  it("counts below half the limit here and sends them to Redis in a batch, with the window's expiry", async () => {
    const store = gatewayStore();
    const ip = "10.0.0.1";
    const answers = [];
    for (let i = 0; i < 10; i++) answers.push(await incr(store, ip, 1000));
    expect(answers.map((a) => a.current)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    await waitFor(async () => (await counted(ip)) === 10, 5_000, "the batch in Redis");
    const ttl = await redis.pttl(`${prefix}${ip}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(WINDOW);
  });

  it("counts in Redis before answering from half the limit on: exact at the limit", async () => {
    const store = gatewayStore();
    const ip = "10.0.0.2";
    const answers = [];
    for (let i = 0; i < 12; i++) answers.push(await incr(store, ip, 10));
    expect(answers.map((a) => a.current)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    // The sixth request crossed half of 10: it and every later one were in Redis when answered.
    expect(await counted(ip)).toBe(12);
  });

  it("adds up what several gateways counted: one learns the others' counts at its next flush", async () => {
    const [a, b] = [gatewayStore(), gatewayStore()];
    const ip = "10.0.0.3";
    for (let i = 0; i < 30; i++) await incr(a, ip, 100);
    await waitFor(async () => (await counted(ip)) === 30, 5_000, "gateway A's batch in Redis");
    await incr(b, ip, 100);
    await waitFor(async () => (await counted(ip)) === 31, 5_000, "gateway B's batch in Redis");
    // B now knows the shared count: its next request is the 32nd, and past half it asks Redis.
    expect((await incr(b, ip, 100)).current).toBe(32);
    for (let i = 0; i < 18; i++) await incr(b, ip, 100);
    const past = await incr(b, ip, 100);
    expect(past.current).toBe(51);
    expect(await counted(ip)).toBe(51);
  });

  it("keeps separate counts per route (the plugin's child stores)", async () => {
    const store = gatewayStore();
    const route = store.child({ routeInfo: { method: "GET", url: "/a" } } as never);
    await incr(route, "10.0.0.4", 2);
    await incr(route, "10.0.0.4", 2);
    expect(await redis.get(`${prefix}GET/a-10.0.0.4`)).toBe("2");
    expect(await counted("10.0.0.4")).toBe(0);
  });

  it("with Redis unreachable: answers below half from its own count, and fails the count past it", async () => {
    const down = new Redis("redis://127.0.0.1:1", {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    down.on("error", () => {});
    try {
      const store = gatewayStore(down);
      expect((await incr(store, "10.0.0.5", 10)).current).toBe(1);
      // Past half: the count must come from Redis, so the plugin's skipOnError decides (it lets it pass).
      for (let i = 0; i < 4; i++) await incr(store, "10.0.0.5", 10);
      await expect(incr(store, "10.0.0.5", 10)).rejects.toThrow();
    } finally {
      down.disconnect();
    }
  });
});
