import { mine } from "@fundraise/contracts/testing";
import { ChainRpc } from "@fundraise/protocol";
import type { ServiceHarness } from "@fundraise/service-kit/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  chainEnv,
  indexedBlock,
  setStatus,
  startChain,
  startHarness,
  type TestChain,
} from "../test/harness.ts";

let chain: TestChain;
let h: ServiceHarness;

beforeAll(async () => {
  chain = await startChain();
  h = await startHarness("confirmations", chainEnv(chain, { CHAIN_CONFIRMATIONS: "3" }));
});

afterAll(async () => {
  await h?.stop();
  await chain?.stop();
});

it("a block's logs count only once it is CHAIN_CONFIRMATIONS blocks deep", async () => {
  const address = chain.signers[3]!.address;
  const { blockNumber } = await setStatus(chain, address, "Whitelisted");
  await expect.poll(() => indexedBlock(h.sql), { timeout: 10_000 }).toBe(blockNumber - 3);
  expect(await h.client.call(ChainRpc.whitelisted, { address })).toMatchObject({ whitelisted: false });

  await mine(chain.provider, 2);
  await expect.poll(() => indexedBlock(h.sql), { timeout: 10_000 }).toBe(blockNumber - 1);
  expect(await h.client.call(ChainRpc.whitelisted, { address })).toMatchObject({ whitelisted: false });

  await mine(chain.provider, 1);
  await expect
    .poll(async () => (await h.client.call(ChainRpc.whitelisted, { address })).whitelisted, {
      timeout: 10_000,
    })
    .toBe(true);
  expect(await indexedBlock(h.sql)).toBe(blockNumber);
  // The answer says the block it was read at: confirmed to depth 3, so the transaction's block, not the head.
  expect(await h.client.call(ChainRpc.whitelisted, { address })).toEqual({
    whitelisted: true,
    indexedBlock: blockNumber,
  });
});
