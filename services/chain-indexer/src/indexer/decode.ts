import {
  AUCTION_EVENTS,
  type ChainEventName,
  chainEvents,
  eventNameByTopic,
  FACTORY_EVENTS,
  type RawLog,
  REGISTRY_EVENTS,
} from "@fundraise/contracts";
import { getAddress, Interface } from "ethers";

/** The auction events the indexer follows (VariableChange, a progress counter, is not one of them). */
export const FOLLOWED_AUCTION_EVENTS = AUCTION_EVENTS.filter((name) => name !== "VariableChange");

const topicsOf = (names: readonly ChainEventName[]) => names.map((name) => chainEvents[name].topic);
/** Topic-0 filters of each source's followed events. */
export const REGISTRY_TOPICS = topicsOf(REGISTRY_EVENTS);
export const FACTORY_TOPICS = topicsOf(FACTORY_EVENTS);
export const AUCTION_TOPICS = topicsOf(FOLLOWED_AUCTION_EVENTS);

const followed = new Set<ChainEventName>([...REGISTRY_EVENTS, ...FACTORY_EVENTS, ...FOLLOWED_AUCTION_EVENTS]);
const abi = new Interface([...followed].map((name) => chainEvents[name].declaration));

export type EventArgs = Record<string, string | boolean>;

/** One log, decoded: the unit the indexer stores once and turns into facts. */
export interface DecodedLog {
  chainId: number;
  /** Lower-case 0x-hex, as the node returns it. */
  txHash: string;
  logIndex: number;
  txIndex: number;
  blockNumber: number;
  blockHash: string;
  /** Epoch seconds; null when the node does not return it with the log. */
  blockTimestamp: number | null;
  /** The emitting contract, EIP-55. */
  address: string;
  /** The key in `chainEvents`: `DutchBidSubmission` for the Dutch form of BidSubmission (by topic 0). */
  event: ChainEventName;
  /** Arguments by camelCase name: addresses EIP-55, bytes32 as 0x-hex, integers as decimal strings. */
  args: EventArgs;
  /** What the event does not say but the chain said at its block (a created auction's token); rarely set. */
  detail: Record<string, string> | null;
}

const camelCase = (name: string) => name.charAt(0).toLowerCase() + name.slice(1);

function argValue(type: string, value: unknown): string | boolean {
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "boolean") return value;
  if (type === "address") return getAddress(String(value));
  if (type.startsWith("bytes")) return String(value).toLowerCase();
  return String(value);
}

/** Decodes a followed event's log; null for any other log (an unfollowed event of the same contract). */
export function decodeLog(chainId: number, raw: RawLog): DecodedLog | null {
  const parsed = abi.parseLog({ topics: raw.topics, data: raw.data });
  const event = parsed && eventNameByTopic.get(parsed.topic);
  if (!parsed || !event) return null;
  const args: EventArgs = {};
  parsed.fragment.inputs.forEach((input, i) => {
    args[camelCase(input.name)] = argValue(input.type, parsed.args[i]);
  });
  return {
    chainId,
    txHash: raw.transactionHash.toLowerCase(),
    logIndex: Number.parseInt(raw.logIndex, 16),
    txIndex: Number.parseInt(raw.transactionIndex, 16),
    blockNumber: Number.parseInt(raw.blockNumber, 16),
    blockHash: raw.blockHash.toLowerCase(),
    blockTimestamp: raw.blockTimestamp === undefined ? null : Number.parseInt(raw.blockTimestamp, 16),
    address: getAddress(raw.address),
    event,
    args,
    detail: null,
  };
}

/** Chain order: block, then log index. */
export const byPosition = (a: DecodedLog, b: DecodedLog) =>
  a.blockNumber - b.blockNumber || a.logIndex - b.logIndex;
