import { anvilDemoSetup, auctionAt, bidCoinAt, factoryAt, registryAt, setupDemo } from "@fundraise/contracts";
import { increaseTime, revertTo, snapshot } from "@fundraise/contracts/testing";
import { ChainEvents } from "@fundraise/protocol";
import type { ServiceHarness } from "@fundraise/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  chainEnv,
  outboxFacts,
  projectHash,
  send,
  startChain,
  startHarness,
  storedLogs,
  type TestChain,
  waitIndexed,
} from "../test/harness.ts";

const E18 = 10n ** 18n;
/** A bid's gas depends on its block's second: no estimate (see the contracts' BID_GAS_LIMIT). */
const gasLimit = 400_000n;

let chain: TestChain;
let h: ServiceHarness;
let hash: string;
let auction: string;

beforeAll(async () => {
  chain = await startChain();
  const [admin, , v1, v2, , , , proposer] = chain.signers;
  // #2-#4 whitelisted, #1-#9 funded with bid coin.
  await setupDemo(admin!, chain.deployment, anvilDemoSetup(chain.signers.map((s) => s.address)));
  hash = projectHash("order-book dutch");
  await send(registryAt(chain.deployment.registry, proposer!).registerProject(hash), chain.provider);
  for (const voter of [v1!, v2!]) {
    await send(registryAt(chain.deployment.registry, voter).voteProposal(hash, true), chain.provider);
  }
  const factory = factoryAt(chain.deployment.factory, proposer!);
  await send(factory.createToken(hash, "Order book", "OBD", 1_000n * E18), chain.provider);
  // 100 tokens, reserve price 1 coin per token.
  await send(factory.createAuction(hash, "OBDutchAuction", [100n * E18, 0n, E18, 0n]), chain.provider);
  auction = (await factory.projectTokens(hash)).auction as string;
  await send(auctionAt(auction, proposer!, "OBDutchAuction").startAuction(1_000), chain.provider);
  h = await startHarness("auction_facts", chainEnv(chain));
}, 60_000);

afterAll(async () => {
  await h?.stop();
  await chain?.stop();
});

describe("the spec's auction events on the bus", () => {
  it("a Dutch bid and a claim become bid-submitted (with the price) and tokens-claimed (with the claimer)", async () => {
    const bidder = chain.signers[8]!;
    await send(bidCoinAt(chain.deployment.bidCoin, bidder).approve(auction, 30n * E18), chain.provider);
    // 30 coins at 3 per token: 10 tokens, the whole deposit.
    const bid = auctionAt(auction, bidder, "OBDutchAuction").getFunction("bid(uint256,uint256)");
    await send(bid(30n * E18, 3n * E18, { gasLimit }), chain.provider);
    const bidFact = await receivedFact(ChainEvents.bidSubmitted);
    expect(bidFact).toEqual({
      origin: expect.objectContaining({ chainId: 31337 }),
      projectHash: hash,
      auction,
      sender: bidder.address,
      amount: (30n * E18).toString(),
      price: (3n * E18).toString(),
    });

    await increaseTime(chain.provider, 1_000);
    const fork = await snapshot(chain.provider);
    // The first claim also ends the auction: undersubscribed, everyone pays the lowest price, 3.
    const claim = await send(auctionAt(auction, bidder).withDraw({ gasLimit }), chain.provider);
    const claimFact = await receivedFact(ChainEvents.tokensClaimed);
    expect(claimFact).toEqual({
      origin: expect.objectContaining({ txHash: claim.hash.toLowerCase() }),
      projectHash: hash,
      auction,
      round: "0",
      amount: (10n * E18).toString(),
      claimer: bidder.address,
    });
    const logs = await storedLogs(h.sql);
    const named = (event: string) => logs.filter((l) => l.startsWith(`${event} `));
    expect(named("DutchBidSubmission")).toHaveLength(1);
    expect(named("BidSubmission")).toHaveLength(0);
    expect([...named("Claimed"), ...named("ClaimTokens")]).toHaveLength(2);

    // A reorg that drops the claim retracts exactly its facts: the claim and the end, not the stored Claimed.
    await revertTo(chain.provider, fork);
    await chain.provider.send("anvil_mine", ["0x3"]);
    await waitIndexed(h.sql, chain);
    const retracted = (await outboxFacts(h.sql))
      .filter((f) => f.startsWith(`${ChainEvents.factRetracted.name} `))
      .map((f) => JSON.parse(f.slice(ChainEvents.factRetracted.name.length + 1)));
    expect(retracted.map((r) => r.retracted).sort()).toEqual(
      [ChainEvents.auctionStatusChanged.name, ChainEvents.tokensClaimed.name].sort(),
    );
    expect(retracted.every((r) => r.origin.txHash === claim.hash.toLowerCase())).toBe(true);
  });
});

/** The first fact of a kind the test's consumer received (within 10 s). */
async function receivedFact(event: { name: string }) {
  await expect.poll(() => h.events.some((e) => e.name === event.name), { timeout: 10_000 }).toBe(true);
  return h.events.find((e) => e.name === event.name)?.payload;
}
