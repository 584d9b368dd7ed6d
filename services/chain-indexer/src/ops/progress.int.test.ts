import { type ChainProgress, chainProgressKey } from "@fundraise/protocol";
import type { ServiceHarness } from "@fundraise/service-kit/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  chainEnv,
  setStatus,
  startChain,
  startHarness,
  type TestChain,
  testRedisPrefix,
  waitIndexed,
} from "../test/harness.ts";

let chain: TestChain;
let h: ServiceHarness;
const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
const prefix = testRedisPrefix();

beforeAll(async () => {
  chain = await startChain();
  h = await startHarness("progress", chainEnv(chain, { REDIS_PREFIX: prefix }));
});

afterAll(async () => {
  await h?.stop();
  await chain?.stop();
  await redis.del(chainProgressKey(prefix));
  redis.disconnect();
});

/** What a live client reads: the key's JSON, or null. */
async function readProgress(): Promise<ChainProgress | null> {
  const raw = await redis.get(chainProgressKey(prefix));
  return raw === null ? null : (JSON.parse(raw) as ChainProgress);
}

it("the writer keeps indexedBlock and headBlock in Redis, and the next block's figures after it", async () => {
  const head = await waitIndexed(h.sql, chain);
  await expect
    .poll(readProgress, { timeout: 5_000 })
    .toEqual({ indexedBlock: head, headBlock: head, at: expect.any(Number) });
  const before = (await readProgress())!;
  expect(Math.abs(before.at - Date.now())).toBeLessThan(60_000);

  const { blockNumber } = await setStatus(chain, chain.signers[7]!.address, "Whitelisted");
  // At most a second after the last write.
  await expect
    .poll(readProgress, { timeout: 5_000 })
    .toEqual({ indexedBlock: blockNumber, headBlock: blockNumber, at: expect.any(Number) });
  expect((await readProgress())!.at).toBeGreaterThan(before.at);
});
