import {
  auctionFactoryAbi,
  type BlockHeader,
  type ChainClient,
  type Deployment,
  type RawLog,
} from "@fundraise/contracts";
import { getAddress, Interface } from "ethers";
import {
  AUCTION_TOPICS,
  byPosition,
  type DecodedLog,
  decodeLog,
  FACTORY_TOPICS,
  REGISTRY_TOPICS,
} from "./decode.ts";

/** Addresses per `eth_getLogs` of auctions (providers cap the address list). */
const AUCTIONS_PER_QUERY = 500;

const factory = new Interface(auctionFactoryAbi);

export type FetchedRange =
  | {
      consistent: true;
      logs: DecodedLog[];
      /** The last block of the range: the cursor once stored. */
      to: BlockHeader;
      /** Blocks seen (the range's ends, the blocks of its logs). */
      blocks: { number: number; hash: string }[];
      /** Auctions created in the range: auction → project hash. */
      newAuctions: Map<string, string>;
    }
  | { consistent: false; reason: string };

/**
 * Every followed log of blocks [from, to], the auctions created in the range included: the registry's and
 * the factory's logs first, then the logs of every known auction plus those created in this range (so an
 * auction created here gets its own logs of this same range).
 *
 * Consistency: the ends of the range are read before and after the logs. The same hashes both times mean
 * no reorg touched the range while it was read (a block hash fixes every block below it); `from`'s parent
 * must be the cursor's block, or the chain changed under the index (the caller then looks for the reorg).
 */
export async function fetchRange(
  chain: ChainClient,
  deployment: Deployment,
  range: { from: number; to: number; parentHash: string | null; auctions: ReadonlyMap<string, string> },
): Promise<FetchedRange> {
  const { from, to } = range;
  const [fromBefore, toBefore] = await chain.blocks([from, to]);
  if (!fromBefore || !toBefore) return { consistent: false, reason: "range beyond the chain's head" };
  if (range.parentHash !== null && fromBefore.parentHash !== range.parentHash) {
    return { consistent: false, reason: "first block's parent is not the indexed block" };
  }
  const chainId = deployment.chainId;
  const decode = (raws: RawLog[]) =>
    raws.map((raw) => decodeLog(chainId, raw)).filter((l): l is DecodedLog => l !== null);

  const platform = decode(
    await chain.getLogs({
      fromBlock: from,
      toBlock: to,
      address: [deployment.registry, deployment.factory],
      topics: [...REGISTRY_TOPICS, ...FACTORY_TOPICS],
    }),
  );
  const newAuctions = new Map<string, string>();
  for (const log of platform) {
    if (log.event === "CreateAuctionEvent" && log.address === deployment.factory) {
      newAuctions.set(log.args.auction as string, log.args.fileHash as string);
    }
  }
  const auctions = [...range.auctions.keys(), ...newAuctions.keys()];
  const auctionLogs: DecodedLog[] = [];
  for (let i = 0; i < auctions.length; i += AUCTIONS_PER_QUERY) {
    const address = auctions.slice(i, i + AUCTIONS_PER_QUERY);
    auctionLogs.push(
      ...decode(await chain.getLogs({ fromBlock: from, toBlock: to, address, topics: AUCTION_TOPICS })),
    );
  }

  const [fromAfter, toAfter] = await chain.blocks([from, to]);
  if (fromAfter?.hash !== fromBefore.hash || toAfter?.hash !== toBefore.hash) {
    return { consistent: false, reason: "the chain changed while the range was read" };
  }
  const logs = [...platform, ...auctionLogs].sort(byPosition);
  if (logs.some((l) => l.blockNumber === to && l.blockHash !== toBefore.hash)) {
    return { consistent: false, reason: "a log of another branch" };
  }
  await fillTimestamps(chain, logs);
  await addAuctionTokens(chain, deployment, logs);
  addClaimers(logs);

  const blocks = new Map<number, string>([
    [fromBefore.number, fromBefore.hash],
    [toBefore.number, toBefore.hash],
  ]);
  for (const log of logs) blocks.set(log.blockNumber, log.blockHash);
  return {
    consistent: true,
    logs,
    to: toBefore,
    blocks: [...blocks].map(([number, hash]) => ({ number, hash })),
    newAuctions,
  };
}

/** Nodes that do not return `blockTimestamp` with logs: read it from the blocks' headers. */
async function fillTimestamps(chain: ChainClient, logs: DecodedLog[]): Promise<void> {
  const missing = [...new Set(logs.filter((l) => l.blockTimestamp === null).map((l) => l.blockNumber))];
  if (missing.length === 0) return;
  const headers = await chain.blocks(missing);
  const timeOf = new Map(headers.filter((h) => h !== null).map((h) => [h.number, h.timestamp]));
  for (const log of logs)
    if (log.blockTimestamp === null) log.blockTimestamp = timeOf.get(log.blockNumber) ?? null;
}

/**
 * CreateAuctionEvent names the auction but not the project's token; the factory's record for the hash at
 * that block does (`projectTokens(hash).token`). One call per auction created.
 */
async function addAuctionTokens(
  chain: ChainClient,
  deployment: Deployment,
  logs: DecodedLog[],
): Promise<void> {
  for (const log of logs) {
    if (log.event !== "CreateAuctionEvent") continue;
    const data = factory.encodeFunctionData("projectTokens", [log.args.fileHash]);
    const result = factory.decodeFunctionResult(
      "projectTokens",
      await chain.call(deployment.factory, data, log.blockNumber),
    );
    log.detail = { token: getAddress(String(result.token)), proposer: getAddress(String(result.proposer)) };
  }
}

/**
 * ClaimTokens (the spec's claim event) does not name the claimer; the auction's `Claimed`, the log just before
 * it in the same transaction, does. Both are in the range: a transaction's logs share its block.
 */
function addClaimers(logs: DecodedLog[]): void {
  logs.forEach((log, i) => {
    const before = logs[i - 1];
    if (
      log.event === "ClaimTokens" &&
      before?.event === "Claimed" &&
      before.txHash === log.txHash &&
      before.logIndex === log.logIndex - 1 &&
      before.address === log.address
    ) {
      log.detail = { claimer: String(before.args.bidder) };
    }
  });
}
