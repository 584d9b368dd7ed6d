import { describe, expect, it } from "vitest";
import {
  auctionFieldsOf,
  evaluationFieldsOf,
  factKindOf,
  type StandingFact,
  statusOfEvaluation,
} from "./chain-facts.ts";

const fact = (kind: StandingFact["kind"], value: string | null, block: number, logIndex = 0) => ({
  kind,
  value,
  block,
  logIndex,
});

describe("the status an evaluation gives", () => {
  it("approved → Approved, rejected → Rejected, none → Pending", () => {
    expect([true, false, null].map(statusOfEvaluation)).toEqual(["Approved", "Rejected", "Pending"]);
  });
});

describe("fields recomputed from the chain facts that still stand (after a retraction)", () => {
  it("the first standing evaluation decides the status; none leaves the project Pending", () => {
    expect(
      evaluationFieldsOf([fact("evaluation", "Rejected", 12, 1), fact("evaluation", "Approved", 12, 0)]),
    ).toEqual({ status: "Approved", evaluationBlock: 12, evaluationLogIndex: 0 });
    expect(evaluationFieldsOf([fact("auction-created", null, 3)])).toEqual({
      status: "Pending",
      evaluationBlock: null,
      evaluationLogIndex: null,
    });
  });

  it("auction: created by any auction fact; the latest status holds; started once one left Off", () => {
    expect(
      auctionFieldsOf([
        fact("auction-status", "Paused", 30),
        fact("auction-created", null, 10),
        fact("auction-status", "Running", 20),
        fact("evaluation", "Approved", 40),
      ]),
    ).toEqual({
      isAuctionCreated: true,
      isAuctionStarted: true,
      auctionStatus: "Paused",
      auctionBlock: 30,
      auctionLogIndex: 0,
    });
    expect(
      auctionFieldsOf([fact("auction-created", null, 10), fact("auction-status", "Off", 11)]),
    ).toMatchObject({ isAuctionCreated: true, isAuctionStarted: false, auctionStatus: "Off" });
    expect(auctionFieldsOf([])).toEqual({
      isAuctionCreated: false,
      isAuctionStarted: false,
      auctionStatus: null,
      auctionBlock: null,
      auctionLogIndex: null,
    });
  });

  it("only the facts that set project fields have a kind", () => {
    expect(factKindOf("chain.project.evaluated")).toBe("evaluation");
    expect(factKindOf("chain.user-status.changed")).toBeUndefined();
  });
});
