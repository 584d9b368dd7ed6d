import Type, { type Static } from "typebox";
import { Address, AuctionStatus, Bytes32Hex, Nullable, UserRole } from "./common.ts";
import { defineEvent, defineRpc } from "./message.ts";

/** One decoded chain log as the event-debug endpoints return it. */
export const EventLog = Type.Object(
  {
    event: Type.Record(Type.String(), Type.Unknown(), {
      description: "event arguments, camelCase; bytes32 as 0x-hex; integers as decimal strings",
    }),
    log: Type.Object({
      address: Type.String(),
      blockHash: Type.String(),
      blockNumber: Type.Integer(),
      transactionHash: Type.String(),
      transactionIndex: Type.Integer(),
      logIndex: Type.Integer(),
      removed: Type.Boolean(),
    }),
  },
  { $id: "EventLog" },
);

export const HashToProjectDto = Type.Object(
  {
    proposerAddress: Nullable(Type.String()),
    tokenAddress: Nullable(Type.String()),
    auctionAddress: Nullable(Type.String()),
    auctionType: Nullable(Type.String()),
  },
  { $id: "HashToProjectDTO" },
);

const ByAddress = Type.Object({ address: Type.String() });
/**
 * Every chain read says how far the index had got when it answered: the last block whose logs it holds.
 * A client that sent a transaction waits until it reaches the transaction's block.
 */
const IndexedBlock = Type.Integer({ description: "last block indexed when the answer was read" });
const Logs = Type.Object({ logs: Type.Array(EventLog), indexedBlock: IndexedBlock });

/** Every chain call reads the index (written from the chain's logs alone): `effect: "read"`. */
export const ChainRpc = {
  evaluationLogs: defineRpc("chain.logs.evaluations", {
    request: Type.Object({}),
    response: Logs,
    effect: "read",
  }),
  registerLogs: defineRpc("chain.logs.registrations", {
    request: Type.Object({}),
    response: Logs,
    effect: "read",
  }),
  whitelistInsertLogs: defineRpc("chain.logs.whitelist-inserts", {
    request: ByAddress,
    response: Logs,
    effect: "read",
  }),
  whitelistRemoveLogs: defineRpc("chain.logs.whitelist-removes", {
    request: ByAddress,
    response: Logs,
    effect: "read",
  }),
  whitelisted: defineRpc("chain.address.whitelisted", {
    request: ByAddress,
    response: Type.Object({ whitelisted: Type.Boolean(), indexedBlock: IndexedBlock }),
    effect: "read",
  }),
  role: defineRpc("chain.address.role", {
    request: ByAddress,
    response: Type.Object({ role: UserRole, indexedBlock: IndexedBlock }),
    effect: "read",
  }),
  auctionByHash: defineRpc("chain.auction.by-hash", {
    request: Type.Object({ fileHash: Type.String() }),
    response: Type.Object({
      project: HashToProjectDto,
      isAuctionCreated: Type.Boolean(),
      isAuctionStarted: Type.Boolean(),
      auctionStatus: Nullable(AuctionStatus),
      indexedBlock: IndexedBlock,
    }),
    effect: "read",
  }),
  evaluation: defineRpc("chain.project.evaluation", {
    request: Type.Object({ fileHash: Type.String() }),
    response: Type.Object({ isApproved: Nullable(Type.Boolean()), indexedBlock: IndexedBlock }),
    effect: "read",
  }),
  progress: defineRpc("chain.index.progress", {
    request: Type.Object({}),
    response: Type.Object({
      chainId: Type.Integer(),
      indexedBlock: Type.Integer(),
      headBlock: Type.Integer(),
      /**
       * true: `headBlock` is the node's head, read when asked; false or absent (an indexer of an older
       * version): the node did not answer in time, and it is the head the indexer last polled, which lags.
       */
      headFromNode: Type.Optional(Type.Boolean()),
    }),
    effect: "read",
  }),
} as const;

/** Where a fact came from; consumers are idempotent on (chainId, txHash, logIndex). */
export const ChainOrigin = Type.Object({
  chainId: Type.Integer(),
  txHash: Bytes32Hex,
  logIndex: Type.Integer(),
  blockNumber: Type.Integer(),
  blockHash: Bytes32Hex,
  /** The block's time (epoch seconds): dates the fact against an admin's change (rules.md §7.1). */
  blockTimestamp: Type.Optional(Type.Integer({ minimum: 0 })),
});

/** A uint256 as the bus carries it: a decimal string (it does not fit a JSON number). */
const Uint256 = Type.String({ pattern: "^[0-9]+$", description: "uint256 as a decimal string" });

export const ChainEvents = {
  projectRegistered: defineEvent(
    "chain.project.registered",
    Type.Object({ origin: ChainOrigin, from: Address, projectHash: Bytes32Hex }),
  ),
  projectEvaluated: defineEvent(
    "chain.project.evaluated",
    Type.Object({ origin: ChainOrigin, projectHash: Bytes32Hex, isApproved: Type.Boolean() }),
  ),
  userStatusChanged: defineEvent(
    "chain.user-status.changed",
    Type.Object({ origin: ChainOrigin, address: Address, role: UserRole }),
  ),
  auctionCreated: defineEvent(
    "chain.auction.created",
    Type.Object({
      origin: ChainOrigin,
      projectHash: Bytes32Hex,
      auction: Address,
      auctionType: Type.String(),
      creator: Address,
    }),
  ),
  auctionStatusChanged: defineEvent(
    "chain.auction.status-changed",
    Type.Object({ origin: ChainOrigin, projectHash: Bytes32Hex, auction: Address, status: AuctionStatus }),
  ),
  projectRemoved: defineEvent(
    "chain.project.removed",
    Type.Object({ origin: ChainOrigin, projectHash: Bytes32Hex }),
  ),
  /** The registry's admin role was granted to (`isAdmin`) or revoked from an address. */
  adminChanged: defineEvent(
    "chain.admin.changed",
    Type.Object({ origin: ChainOrigin, address: Address, isAdmin: Type.Boolean() }),
  ),
  tokenCreated: defineEvent(
    "chain.token.created",
    Type.Object({
      origin: ChainOrigin,
      creator: Address,
      token: Address,
      name: Type.String(),
      symbol: Type.String(),
    }),
  ),
  bidSubmitted: defineEvent(
    "chain.auction.bid-submitted",
    Type.Object({
      origin: ChainOrigin,
      projectHash: Bytes32Hex,
      auction: Address,
      sender: Address,
      amount: Uint256,
      /** The Dutch types' form of BidSubmission only: bid coin per whole token the bid was charged at. */
      price: Type.Optional(Uint256),
    }),
  ),
  /** `ClaimTokens(round, amount)`: tokens claimed after the end (round is 0: auctions have one round). */
  tokensClaimed: defineEvent(
    "chain.auction.tokens-claimed",
    Type.Object({
      origin: ChainOrigin,
      projectHash: Bytes32Hex,
      auction: Address,
      round: Uint256,
      amount: Uint256,
      /** The bidder of the `Claimed` log just before it (absent if there was none). */
      claimer: Type.Optional(Address),
    }),
  ),
  /** A fact retracted by a reorg: consumers undo what `retracted` names. */
  factRetracted: defineEvent(
    "chain.fact.retracted",
    Type.Object({ origin: ChainOrigin, retracted: Type.String({ description: "routing key of the fact" }) }),
  ),
} as const;

/**
 * Where the active indexer keeps how far it is, for live clients: a JSON string `ChainProgress`, written at
 * most once a second and only when a figure changed (no expiry: an idle chain changes nothing; `at` dates it).
 */
export const chainProgressKey = (prefix: string) => `${prefix}chain:progress`;

export const ChainProgress = Type.Object({
  indexedBlock: Type.Integer({ description: "last block whose logs are indexed" }),
  headBlock: Type.Integer({ description: "chain head last seen" }),
  at: Type.Integer({ description: "when it was written, epoch ms" }),
});
export type ChainProgress = Static<typeof ChainProgress>;
