import { type ChainEventName, roleOf } from "@fundraise/contracts";
import { type AuctionStatus, ChainEvents, type EventDescriptor, type PayloadOf } from "@fundraise/protocol";
import { ZeroAddress } from "ethers";
import type { DecodedLog } from "./decode.ts";

export type ChainOrigin = PayloadOf<typeof ChainEvents.projectRegistered>["origin"];

/** A fact owed to the bus: an event and its payload. */
export interface Fact<D extends EventDescriptor = EventDescriptor> {
  descriptor: D;
  payload: PayloadOf<D>;
}

/** What the index knew up to (and including) the log being turned into facts. */
export interface ChainState {
  /** Whether the address held the registry's admin role. */
  isAdmin(address: string, at: DecodedLog): Promise<boolean>;
  /** The address's registry user status (0 when never set). */
  statusOf(address: string, at: DecodedLog): Promise<number>;
  /** The project hash an auction created by the factory was created for; null for an unknown auction. */
  projectOfAuction(auction: string): Promise<string | null>;
}

/**
 * The facts each event produces, by routing key. A reorg retracts exactly these for every log it removes
 * (the mapping depends on the event alone, so it need not be stored per log).
 */
export const FACTS_OF_EVENT: Record<ChainEventName, readonly EventDescriptor[]> = {
  Register: [ChainEvents.projectRegistered],
  ProjectEvaluation: [ChainEvents.projectEvaluated],
  Vote: [],
  VoteDelegate: [],
  WhitelistInsert: [],
  WhitelistRemove: [],
  UserStatusChanged: [ChainEvents.userStatusChanged],
  AdminChange: [ChainEvents.adminChanged, ChainEvents.userStatusChanged],
  ProjectRemoved: [ChainEvents.projectRemoved],
  TokenCreation: [ChainEvents.tokenCreated],
  CreateAuctionEvent: [ChainEvents.auctionCreated],
  AuctionStarted: [ChainEvents.auctionStatusChanged],
  AuctionFinished: [ChainEvents.auctionStatusChanged],
  AuctionPaused: [ChainEvents.auctionStatusChanged],
  BidSubmission: [ChainEvents.bidSubmitted],
  DutchBidSubmission: [ChainEvents.bidSubmitted],
  // Stored for the claimer it names (ClaimTokens' detail); the claim's fact comes from ClaimTokens.
  Claimed: [],
  ClaimTokens: [ChainEvents.tokensClaimed],
  VariableChange: [],
};

const AUCTION_STATUS_OF: Partial<Record<ChainEventName, AuctionStatus>> = {
  AuctionStarted: "Running",
  AuctionPaused: "Paused",
  AuctionFinished: "Ended",
};

export function originOf(
  log: Pick<DecodedLog, "chainId" | "txHash" | "logIndex" | "blockNumber" | "blockHash" | "blockTimestamp">,
): ChainOrigin {
  return {
    chainId: log.chainId,
    txHash: log.txHash,
    logIndex: log.logIndex,
    blockNumber: log.blockNumber,
    blockHash: log.blockHash,
    ...(log.blockTimestamp === null ? {} : { blockTimestamp: log.blockTimestamp }),
  };
}

const fact = <D extends EventDescriptor>(descriptor: D, payload: PayloadOf<D>): Fact =>
  ({ descriptor, payload }) as Fact;

/** The facts one stored log publishes (rules.md §6.3), in this order. */
export async function factsOf(log: DecodedLog, state: ChainState): Promise<Fact[]> {
  const origin = originOf(log);
  /** A string argument (addresses, hashes, integers and names are strings once decoded). */
  const arg = (name: string) => String(log.args[name]);
  switch (log.event) {
    case "Register":
      return [
        fact(ChainEvents.projectRegistered, { origin, from: arg("from"), projectHash: arg("projectHash") }),
      ];
    case "ProjectEvaluation":
      return [
        fact(ChainEvents.projectEvaluated, {
          origin,
          projectHash: arg("projectHash"),
          isApproved: log.args.isApproved === true,
        }),
      ];
    case "ProjectRemoved":
      return [fact(ChainEvents.projectRemoved, { origin, projectHash: arg("projectHash") })];
    case "UserStatusChanged": {
      // The chain role: Admin while the address holds the admin role, else its new status.
      const role = roleOf(Number(arg("newStatus")), await state.isAdmin(arg("user"), log));
      return [fact(ChainEvents.userStatusChanged, { origin, address: arg("user"), role })];
    }
    case "AdminChange": {
      // The contract grants (from = 0) or revokes (to = 0): one address changes per log.
      const granted = arg("to") !== ZeroAddress;
      const address = granted ? arg("to") : arg("from");
      const role = granted ? "Admin" : roleOf(await state.statusOf(address, log), false);
      return [
        fact(ChainEvents.adminChanged, { origin, address, isAdmin: granted }),
        fact(ChainEvents.userStatusChanged, { origin, address, role }),
      ];
    }
    case "TokenCreation":
      return [
        fact(ChainEvents.tokenCreated, {
          origin,
          creator: arg("creator"),
          token: arg("token"),
          name: arg("name"),
          symbol: arg("symbol"),
        }),
      ];
    case "CreateAuctionEvent":
      return [
        fact(ChainEvents.auctionCreated, {
          origin,
          projectHash: arg("fileHash"),
          auction: arg("auction"),
          auctionType: arg("auctionType"),
          creator: arg("creator"),
        }),
      ];
    case "AuctionStarted":
    case "AuctionPaused":
    case "AuctionFinished":
    case "BidSubmission":
    case "DutchBidSubmission":
    case "ClaimTokens": {
      const projectHash = await state.projectOfAuction(log.address);
      if (projectHash === null) return [];
      if (log.event === "BidSubmission" || log.event === "DutchBidSubmission") {
        return [
          fact(ChainEvents.bidSubmitted, {
            origin,
            projectHash,
            auction: log.address,
            sender: arg("sender"),
            amount: arg("amount"),
            ...(log.event === "DutchBidSubmission" ? { price: arg("price") } : {}),
          }),
        ];
      }
      if (log.event === "ClaimTokens") {
        const claimer = log.detail?.claimer;
        return [
          fact(ChainEvents.tokensClaimed, {
            origin,
            projectHash,
            auction: log.address,
            round: arg("round"),
            amount: arg("amount"),
            ...(claimer === undefined ? {} : { claimer }),
          }),
        ];
      }
      const status = AUCTION_STATUS_OF[log.event] as AuctionStatus;
      return [fact(ChainEvents.auctionStatusChanged, { origin, projectHash, auction: log.address, status })];
    }
    default:
      return [];
  }
}
