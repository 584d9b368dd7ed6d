import { EventFragment } from "ethers";

/** Which contract emits an event: the registry, the factory, or any auction the factory created. */
export type ChainEventSource = "registry" | "factory" | "auction";

export type ChainEventSpec = {
  /** The Solidity name (an overload shares it: the key in `chainEvents` and `signature` tell them apart). */
  name: string;
  source: ChainEventSource;
  /** Solidity declaration with indexed flags and argument names (usable as an ethers fragment). */
  declaration: string;
  /** Canonical signature, e.g. `Register(address,bytes32)`. */
  signature: string;
  /** keccak256 of the signature: topic 0 of every log of this event. */
  topic: string;
};

function spec(source: ChainEventSource, declaration: string): ChainEventSpec {
  const fragment = EventFragment.from(declaration);
  return {
    name: fragment.name,
    source,
    declaration,
    signature: fragment.format("sighash"),
    topic: fragment.topicHash,
  };
}

/**
 * Every event the indexer follows. A test checks each declaration against the generated ABIs, so these
 * strings cannot drift from the contracts. Keys are the Solidity names but for the overload
 * `DutchBidSubmission`, the Dutch form of `BidSubmission` (another topic 0; in ethers, name either form by
 * its `signature`: a bare `getEvent("BidSubmission")` is ambiguous).
 */
export const chainEvents = {
  Register: spec("registry", "event Register(address indexed from, bytes32 projectHash)"),
  ProjectEvaluation: spec(
    "registry",
    "event ProjectEvaluation(bytes32 indexed projectHash, bool isApproved)",
  ),
  Vote: spec("registry", "event Vote(bytes32 indexed project, address from, bool decision, uint256 weight)"),
  VoteDelegate: spec(
    "registry",
    "event VoteDelegate(address from, address to, bytes32 project, uint256 weight)",
  ),
  WhitelistInsert: spec("registry", "event WhitelistInsert(address indexed user)"),
  WhitelistRemove: spec("registry", "event WhitelistRemove(address indexed user)"),
  UserStatusChanged: spec(
    "registry",
    "event UserStatusChanged(address indexed user, uint8 previousStatus, uint8 newStatus)",
  ),
  AdminChange: spec("registry", "event AdminChange(address indexed from, address indexed to)"),
  ProjectRemoved: spec("registry", "event ProjectRemoved(bytes32 indexed projectHash)"),
  TokenCreation: spec(
    "factory",
    "event TokenCreation(address indexed creator, string Name, string Symbol, address indexed token)",
  ),
  CreateAuctionEvent: spec(
    "factory",
    "event CreateAuctionEvent(address indexed creator, address auction, string auctionType, bytes32 fileHash)",
  ),
  AuctionStarted: spec("auction", "event AuctionStarted(uint256 start, uint256 end)"),
  AuctionFinished: spec("auction", "event AuctionFinished(uint256 end, uint256 finalPrice)"),
  AuctionPaused: spec("auction", "event AuctionPaused(uint256 pauseDuration)"),
  BidSubmission: spec("auction", "event BidSubmission(address indexed sender, uint256 amount)"),
  DutchBidSubmission: spec(
    "auction",
    "event BidSubmission(address indexed sender, uint256 amount, uint256 price)",
  ),
  Claimed: spec(
    "auction",
    "event Claimed(address indexed bidder, uint256 tokenAmount, uint256 refundAmount)",
  ),
  ClaimTokens: spec("auction", "event ClaimTokens(uint256 round, uint256 amount)"),
  VariableChange: spec("auction", "event VariableChange(string variable, uint256 value)"),
} as const satisfies Record<string, ChainEventSpec>;

export type ChainEventName = keyof typeof chainEvents;

export const REGISTRY_EVENTS = [
  "Register",
  "ProjectEvaluation",
  "Vote",
  "VoteDelegate",
  "WhitelistInsert",
  "WhitelistRemove",
  "UserStatusChanged",
  "AdminChange",
  "ProjectRemoved",
] as const satisfies readonly ChainEventName[];

export const FACTORY_EVENTS = [
  "TokenCreation",
  "CreateAuctionEvent",
] as const satisfies readonly ChainEventName[];

export const AUCTION_EVENTS = [
  "AuctionStarted",
  "AuctionFinished",
  "AuctionPaused",
  "BidSubmission",
  "DutchBidSubmission",
  "Claimed",
  "ClaimTokens",
  "VariableChange",
] as const satisfies readonly ChainEventName[];

/** The auctions' progress event: `VariableChange(name, value)` reports a public variable's new value. */
export const AUCTION_PROGRESS_EVENT = "VariableChange" satisfies ChainEventName;

/** Topic 0 → event spec, for routing raw logs. */
export const eventByTopic: ReadonlyMap<string, ChainEventSpec> = new Map(
  Object.values(chainEvents).map((e) => [e.topic, e]),
);

/** Topic 0 → key in `chainEvents` (what tells the two `BidSubmission` forms apart). */
export const eventNameByTopic: ReadonlyMap<string, ChainEventName> = new Map(
  (Object.keys(chainEvents) as ChainEventName[]).map((name) => [chainEvents[name].topic, name]),
);

/** Topics of one source's events, for an `eth_getLogs` topic-0 filter. */
export function topicsOf(source: ChainEventSource): string[] {
  return Object.values(chainEvents)
    .filter((e) => e.source === source)
    .map((e) => e.topic);
}
