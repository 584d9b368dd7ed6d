import { auctionAbi, type ChainEventName, chainEvents, type RawLog } from "@fundraise/contracts";
import { validatorOf } from "@fundraise/protocol";
import { Interface } from "ethers";
import { describe, expect, it } from "vitest";
import { AUCTION_TOPICS, type DecodedLog, decodeLog } from "./decode.ts";
import { type ChainState, FACTS_OF_EVENT, factsOf } from "./facts.ts";

const auction = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const bidder = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const projectHash = `0x${"ab".repeat(32)}`;
const auctionInterface = new Interface(auctionAbi as unknown as string[]);

/** A raw log of the auction's event `signature` at log index `logIndex`, as eth_getLogs returns it. */
function rawLog(signature: string, args: unknown[], logIndex = 0): RawLog {
  const fragment = auctionInterface.getEvent(signature)!;
  const { data, topics } = auctionInterface.encodeEventLog(fragment, args);
  return {
    address: auction.toLowerCase(),
    topics,
    data,
    blockHash: `0x${"11".repeat(32)}`,
    blockNumber: "0x10",
    blockTimestamp: "0x64",
    transactionHash: `0x${"22".repeat(32)}`,
    transactionIndex: "0x0",
    logIndex: `0x${logIndex.toString(16)}`,
  };
}

const decoded = (raw: RawLog): DecodedLog => {
  const log = decodeLog(31337, raw);
  if (!log) throw new Error("not decoded");
  return log;
};

const state: ChainState = {
  isAdmin: async () => false,
  statusOf: async () => 0,
  projectOfAuction: async (address) => (address === auction ? projectHash : null),
};

/** The facts of a log, each checked against its schema; also checks they are what a reorg retracts. */
async function factsOfLog(log: DecodedLog) {
  const facts = await factsOf(log, state);
  for (const f of facts) expect(validatorOf(f.descriptor.payload).issues(f.payload)).toEqual([]);
  expect(facts.map((f) => f.descriptor.name)).toEqual(FACTS_OF_EVENT[log.event].map((d) => d.name));
  return facts.map((f) => ({ name: f.descriptor.name, payload: f.payload }));
}

describe("the spec's auction events", () => {
  it("follows both BidSubmission forms, ClaimTokens and Claimed, by their own topics", () => {
    const followed: ChainEventName[] = ["BidSubmission", "DutchBidSubmission", "ClaimTokens", "Claimed"];
    for (const name of followed) expect(AUCTION_TOPICS).toContain(chainEvents[name].topic);
  });

  it("a Dutch bid is the bid-submitted fact with its price", async () => {
    const log = decoded(
      rawLog("BidSubmission(address,uint256,uint256)", [bidder, 80n * 10n ** 18n, 8n * 10n ** 18n]),
    );
    expect(log.event).toBe("DutchBidSubmission");
    expect(await factsOfLog(log)).toEqual([
      {
        name: "chain.auction.bid-submitted",
        payload: {
          origin: expect.objectContaining({
            chainId: 31337,
            blockNumber: 16,
            logIndex: 0,
            blockTimestamp: 100,
          }),
          projectHash,
          auction,
          sender: bidder,
          amount: "80000000000000000000",
          price: "8000000000000000000",
        },
      },
    ]);
  });

  it("a plain bid is the bid-submitted fact without a price", async () => {
    const log = decoded(rawLog("BidSubmission(address,uint256)", [bidder, 5n]));
    expect(log.event).toBe("BidSubmission");
    const [bid] = await factsOfLog(log);
    expect(bid?.payload).toMatchObject({ sender: bidder, amount: "5" });
    expect(bid?.payload).not.toHaveProperty("price");
  });

  it("ClaimTokens is the tokens-claimed fact, with the claimer its Claimed named", async () => {
    const log = decoded(rawLog("ClaimTokens", [0n, 30n * 10n ** 18n], 3));
    expect(log.event).toBe("ClaimTokens");
    // fetch-range.ts sets the detail from the Claimed log just before it.
    log.detail = { claimer: bidder };
    expect(await factsOfLog(log)).toEqual([
      {
        name: "chain.auction.tokens-claimed",
        payload: {
          origin: expect.objectContaining({ logIndex: 3 }),
          projectHash,
          auction,
          round: "0",
          amount: "30000000000000000000",
          claimer: bidder,
        },
      },
    ]);
    log.detail = null;
    expect((await factsOfLog(log))[0]?.payload).not.toHaveProperty("claimer");
  });

  it("Claimed is stored but makes no fact; an unknown auction's logs make none", async () => {
    expect(await factsOfLog(decoded(rawLog("Claimed", [bidder, 1n, 2n])))).toEqual([]);
    const stranger = { ...rawLog("ClaimTokens", [0n, 1n]), address: bidder.toLowerCase() };
    expect(await factsOf(decoded(stranger), state)).toEqual([]);
  });
});
