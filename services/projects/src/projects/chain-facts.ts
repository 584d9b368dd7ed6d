import type { AuctionStatus, ProjectStatus } from "@fundraise/protocol";

/** The kinds of chain fact that set a project's fields, by the routing key of the event that carries them. */
export const FACT_KIND_OF_KEY = {
  "chain.project.evaluated": "evaluation",
  "chain.auction.created": "auction-created",
  "chain.auction.status-changed": "auction-status",
} as const;
export type FactKind = (typeof FACT_KIND_OF_KEY)[keyof typeof FACT_KIND_OF_KEY];

export const factKindOf = (routingKey: string): FactKind | undefined =>
  (FACT_KIND_OF_KEY as Record<string, FactKind>)[routingKey];

/** A fact that still stands (not retracted), as the ledger keeps it. */
export interface StandingFact {
  kind: FactKind;
  /** evaluation: Approved | Rejected; auction-status: the status; auction-created: null. */
  value: string | null;
  block: number;
  logIndex: number;
}

export interface EvaluationFields {
  status: ProjectStatus;
  evaluationBlock: number | null;
  evaluationLogIndex: number | null;
}

export interface AuctionFields {
  isAuctionCreated: boolean;
  isAuctionStarted: boolean;
  auctionStatus: AuctionStatus | null;
  auctionBlock: number | null;
  auctionLogIndex: number | null;
}

const byPosition = (a: StandingFact, b: StandingFact) => a.block - b.block || a.logIndex - b.logIndex;

/**
 * The status a project's first evaluation on the chain gives it: approved → Approved, rejected → Rejected;
 * none (null) → Pending. Every reader of an evaluation (a chain fact, "sync now", the ledger) asks here.
 */
export const statusOfEvaluation = (isApproved: boolean | null): ProjectStatus =>
  isApproved === null ? "Pending" : isApproved ? "Approved" : "Rejected";

/** The status the standing facts give: the first evaluation decides; without one the project is Pending. */
export function evaluationFieldsOf(facts: readonly StandingFact[]): EvaluationFields {
  const first = facts.filter((f) => f.kind === "evaluation").sort(byPosition)[0];
  // The ledger keeps each evaluation as the status it gave (`statusOfEvaluation`).
  const isApproved = first ? first.value === statusOfEvaluation(true) : null;
  return {
    status: statusOfEvaluation(isApproved),
    evaluationBlock: first?.block ?? null,
    evaluationLogIndex: first?.logIndex ?? null,
  };
}

/**
 * The auction flags the standing facts give: created by any auction fact, the latest status holds, and
 * started once any status left Off. Without auction facts, no auction.
 */
export function auctionFieldsOf(facts: readonly StandingFact[]): AuctionFields {
  const auction = facts.filter((f) => f.kind !== "evaluation").sort(byPosition);
  const statuses = auction.filter((f) => f.kind === "auction-status");
  const last = auction.at(-1);
  return {
    isAuctionCreated: auction.length > 0,
    isAuctionStarted: statuses.some((f) => f.value !== "Off"),
    auctionStatus: (statuses.at(-1)?.value as AuctionStatus | undefined) ?? null,
    auctionBlock: last?.block ?? null,
    auctionLogIndex: last?.logIndex ?? null,
  };
}
