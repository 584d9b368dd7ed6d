import { ChainRpc } from "@fundraise/protocol";
import type { ServiceHarness } from "@fundraise/service-kit/testing";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setStatus, startChain, startHarness, type TestChain, waitIndexed } from "../test/harness.ts";

// anvil serves JSON-RPC over WebSocket on its HTTP port: the indexer subscribes to newHeads there.
let chain: TestChain;
let h: ServiceHarness;
/** The messages the indexer logged, oldest first. */
const said: string[] = [];
beforeAll(async () => {
  chain = await startChain();
  // A poll a minute: only the subscription can bring a new block in within seconds.
  const log = pino({ level: "info" }, { write: (line: string) => void said.push(JSON.parse(line).msg) });
  h = await startHarness(
    "new_heads",
    {
      CHAIN_RPC_URL: chain.anvil.url,
      CHAIN_DEPLOYMENT_FILE: chain.deploymentFile,
      CHAIN_POLL_INTERVAL_MS: "60000",
    },
    log,
  );
  await waitIndexed(h.sql, chain);
}, 60_000);
afterAll(async () => {
  await h?.stop();
  await chain?.stop();
});

describe("new heads", () => {
  it("an announced block is indexed at once, not at the next poll", async () => {
    const address = chain.signers[7]?.address as string;
    // Subscribed, and past the start-up's first idle poll: the loop now waits a minute or for a new head.
    await expect
      .poll(() => said)
      .toEqual(
        expect.arrayContaining([
          "subscribed to the node's new heads",
          "caught up with the chain; following the head",
        ]),
      );
    await setStatus(chain, address, "Whitelisted");
    await expect
      .poll(async () => (await h.client.call(ChainRpc.whitelisted, { address })).whitelisted, {
        timeout: 5_000,
        interval: 20,
      })
      .toBe(true);
  });
});
