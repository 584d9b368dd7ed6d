import { randomBytes } from "node:crypto";
import { ErrorCode } from "@fundraise/protocol";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRateLimiter } from "./rate-limiter.ts";

// The sign-in counters on real Redis: one script per hit, one per refund.
let redis: Redis;
const prefix = `test:auth-rate:${randomBytes(6).toString("hex")}:`;
beforeAll(() => {
  redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", { enableAutoPipelining: true });
});
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

const limit = (subject: string, max: number) => ({ action: "login", subject, limit: max, windowSeconds: 60 });

describe("createRateLimiter", () => {
  it("counts every limit of a call, refuses past the smallest, and expires each counter after its window", async () => {
    const limiter = createRateLimiter(redis, prefix);
    await limiter.hit([limit("ip:a", 2), limit("ip:a|0xabc", 5)]);
    await limiter.hit([limit("ip:a", 2), limit("ip:a|0xabc", 5)]);
    await expect(limiter.hit([limit("ip:a", 2), limit("ip:a|0xabc", 5)])).rejects.toMatchObject({
      kind: "rate_limited",
      code: ErrorCode.RATE_LIMITED,
    });
    const keys = (await redis.keys(`${prefix}rate:login:*`)).sort();
    expect(keys).toHaveLength(2);
    for (const key of keys) {
      expect(Number(await redis.ttl(key))).toBeGreaterThan(55);
      expect(Number(await redis.ttl(key))).toBeLessThanOrEqual(61);
    }
    expect(await Promise.all(keys.map((k) => redis.get(k)))).toEqual(["3", "3"]);
  });

  it("takes a refunded call back, and does not bring back a counter whose window ended", async () => {
    const limiter = createRateLimiter(redis, prefix);
    const attempt = await limiter.hit([limit("ip:b", 1)]);
    await attempt.refund();
    // The refund made room again: a second call within the limit of one passes.
    const second = await limiter.hit([limit("ip:b", 1)]);
    const [key] = await redis.keys(`${prefix}rate:login:ip:b:*`);
    await redis.del(key as string); // the window ended
    await second.refund();
    expect(await redis.exists(key as string)).toBe(0);
  });
});
