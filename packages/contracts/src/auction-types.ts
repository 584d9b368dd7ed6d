import { dutchAuctionAbi } from "./generated/dutch-auction.ts";
import { fcfsAuctionAbi } from "./generated/fcfs-auction.ts";
import { obDutchAuctionAbi } from "./generated/ob-dutch-auction.ts";
import { obFcfsAuctionAbi } from "./generated/ob-fcfs-auction.ts";
import { pseudoCappedAuctionAbi } from "./generated/pseudo-capped-auction.ts";
import { strictDutchAuctionAbi } from "./generated/strict-dutch-auction.ts";
import { uncappedAuctionAbi } from "./generated/uncapped-auction.ts";

/**
 * Auction type names exactly as `AuctionFactory.createAuction` takes them and `CreateAuctionEvent.auctionType`
 * emits them, in the web client's menu order.
 */
export const AUCTION_TYPES = [
  "UncappedAuction",
  "PseudoCappedAuction",
  "OBFCFSAuction",
  "FCFSAuction",
  "DutchAuction",
  "OBDutchAuction",
  "StrictDutchAuction",
] as const;

export type AuctionType = (typeof AUCTION_TYPES)[number];

export function isAuctionType(value: string): value is AuctionType {
  return (AUCTION_TYPES as readonly string[]).includes(value);
}

/** On-chain `AuctionStatus` enum values. */
export const AuctionStatus = { Off: 0, Running: 1, Paused: 2, Ended: 3 } as const;
export type AuctionStatusName = keyof typeof AuctionStatus;
export const AUCTION_STATUS_NAMES = [
  "Off",
  "Running",
  "Paused",
  "Ended",
] as const satisfies readonly AuctionStatusName[];

/** Name of an on-chain auction status value; throws on a value the contracts never produce. */
export function auctionStatusName(value: number | bigint): AuctionStatusName {
  const name = AUCTION_STATUS_NAMES[Number(value)];
  if (name === undefined) throw new RangeError(`unknown auction status ${value}`);
  return name;
}

/** The full ABI of each auction type (type-specific getters such as `minPrice` included). */
export const auctionAbiByType = {
  UncappedAuction: uncappedAuctionAbi,
  PseudoCappedAuction: pseudoCappedAuctionAbi,
  OBFCFSAuction: obFcfsAuctionAbi,
  FCFSAuction: fcfsAuctionAbi,
  DutchAuction: dutchAuctionAbi,
  OBDutchAuction: obDutchAuctionAbi,
  StrictDutchAuction: strictDutchAuctionAbi,
} as const satisfies Record<AuctionType, readonly unknown[]>;
