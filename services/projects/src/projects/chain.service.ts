import type { MessageContext } from "@fundraise/bus";
import {
  type AuctionStatus,
  type Caller,
  type ChainEvents,
  type ChainRpc,
  ErrorCode,
  errors,
  isAppError,
  type PayloadOf,
  type ResponseOf,
} from "@fundraise/protocol";
import { announce, audienceOf } from "./announce.ts";
import {
  auctionFieldsOf,
  evaluationFieldsOf,
  type FactKind,
  factKindOf,
  statusOfEvaluation,
} from "./chain-facts.ts";
import { isAccepted, requireLive, requireWriter } from "./project.access.ts";
import type { Project } from "./project.entity.ts";
import { ProjectErrors } from "./project.errors.ts";
import { type ProjectDtoOut, toProjectDto } from "./project.mapper.ts";
import type { OpContext } from "./project.ports.ts";
import type { FactKey, ProjectRepository, ProjectTx } from "./project.repository.ts";
import { findVisible } from "./visibility.ts";

export type Evaluation = ResponseOf<typeof ChainRpc.evaluation>;
export type AuctionState = ResponseOf<typeof ChainRpc.auctionByHash>;

/** The chain index (the chain-indexer's RPC), as "sync now" needs it; app.ts wires it to ChainRpc. */
export interface ChainIndex {
  evaluation(projectHash: string, ctx: OpContext): Promise<Evaluation>;
  auction(projectHash: string, ctx: OpContext): Promise<AuctionState>;
}

type Position = { block: number; logIndex: number };
type FactContext = Pick<
  MessageContext,
  "messageId" | "log" | "requestId" | "traceparent" | "causedBy" | "markDuplicate"
>;

export interface ChainSync {
  /** ChangeStatus: the status the chain's first ProjectEvaluation gives, read from the index now. */
  syncStatus(caller: Caller, id: number, ctx: OpContext): Promise<ProjectDtoOut>;
  /** CreateAuction / StartAuction: the auction flags, read from the index now. */
  syncAuction(caller: Caller, id: number, ctx: OpContext): Promise<ProjectDtoOut>;
  applyEvaluation(fact: PayloadOf<typeof ChainEvents.projectEvaluated>, ctx: FactContext): Promise<void>;
  applyAuctionCreated(fact: PayloadOf<typeof ChainEvents.auctionCreated>, ctx: FactContext): Promise<void>;
  applyAuctionStatus(
    fact: PayloadOf<typeof ChainEvents.auctionStatusChanged>,
    ctx: FactContext,
  ): Promise<void>;
  /** A bid or a claim on a project's auction: nothing of the project changes, its live readers hear of it. */
  applyAuctionActivity(
    fact: Pick<PayloadOf<typeof ChainEvents.bidSubmitted>, "origin" | "projectHash">,
    ctx: FactContext,
  ): Promise<void>;
  /** A reorg retracted a fact: the fields it set are recomputed from the facts that still stand. */
  applyRetraction(fact: PayloadOf<typeof ChainEvents.factRetracted>, ctx: FactContext): Promise<void>;
}

/** The chain's spelling of a project hash: bytes32 as 0x + 64 lower-case hex. */
export const chainHashOf = (fileHash: string) => `0x${fileHash.toLowerCase()}`;
/** The stored spelling: 64 upper-case hex without 0x. */
export const fileHashOfChain = (projectHash: string) => projectHash.slice(2).toUpperCase();

const before = (a: Position, b: Position) =>
  a.block < b.block || (a.block === b.block && a.logIndex < b.logIndex);
const positionOf = (
  block: number | null | undefined,
  logIndex: number | null | undefined,
): Position | null => (block == null ? null : { block: Number(block), logIndex: logIndex ?? 0 });

/** The chain-derived rules of rules.md §4 and §6 (no SQL, no bus). */
export function createChainSync(deps: {
  projects: ProjectRepository;
  index: ChainIndex;
  consumer: string;
}): ChainSync {
  const { projects, index, consumer } = deps;

  /** The index answers (the chain-indexer, or the chain itself when it does not); if neither does, 503. */
  async function ask<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (error) {
      if (isAppError(error) && (error.kind === "unavailable" || error.kind === "timeout")) {
        throw errors.unavailable(
          ErrorCode.CHAIN_UNAVAILABLE,
          "Neither the chain index nor the chain can be reached right now, so the project cannot be " +
            "synced with the chain; the chain's facts still reach the project as they are indexed.",
          { cause: error },
        );
      }
      throw error;
    }
  }

  /**
   * Applies `change` to the locked project and announces it (as `kind`, from `indexedBlock` when a chain
   * fact made it) when the project as clients see it changed, or always with `always` (auction activity).
   */
  async function changeAndAnnounce(
    t: ProjectTx,
    project: Project,
    kind: "status" | "auction",
    change: (project: Project) => void,
    ctx: FactContext | OpContext,
    options: { indexedBlock?: number; always?: boolean } = {},
  ): Promise<void> {
    const before = await audienceOf(t, project);
    const seen = JSON.stringify(toProjectDto(project));
    change(project);
    await t.save();
    if (options.always || JSON.stringify(toProjectDto(project)) !== seen) {
      await announce(t, project.id, kind, before, ctx, options.indexedBlock);
    }
  }

  async function update(
    caller: Caller,
    id: number,
    kind: "status" | "auction",
    change: (project: Project) => void,
    ctx: OpContext,
  ): Promise<ProjectDtoOut> {
    return projects.transaction(async (t) => {
      await requireLive(t, caller);
      const project = await t.lockById(id);
      if (!project) throw ProjectErrors.notFound();
      await changeAndAnnounce(t, project, kind, change, ctx);
      return toProjectDto(project);
    });
  }

  /**
   * Applies a chain fact about the project with this hash once per log in a block (chainId, txHash,
   * logIndex, blockHash), and records it in the ledger so a retraction can undo it. A fact whose retraction
   * arrived first is recorded and not applied.
   */
  async function applyOnce(
    fact: { origin: PayloadOf<typeof ChainEvents.projectEvaluated>["origin"]; projectHash: string },
    kind: FactKind,
    value: string | null,
    ctx: FactContext,
    change: (project: Project) => void,
  ): Promise<void> {
    const key = factKeyOf(fact.origin);
    await projects.once(consumer, claimOf(key), ctx, async (t) => {
      const fileHash = fileHashOfChain(fact.projectHash);
      // An Update taking this hash reads the facts recorded before it, or commits before this finds it.
      await t.lockHash(fileHash);
      const { retracted } = await t.recordFact(key, {
        kind,
        projectHash: fileHash,
        value,
        blockNumber: fact.origin.blockNumber,
      });
      if (retracted) {
        ctx.log.info({ key, kind }, "chain fact already retracted by a reorg: not applied");
        return;
      }
      const project = await t.lockByFileHash(fileHash);
      if (!project) {
        ctx.log.debug({ key, projectHash: fact.projectHash }, "chain fact for a hash no project has");
        return;
      }
      const announced = kind === "evaluation" ? "status" : "auction";
      await changeAndAnnounce(t, project, announced, change, ctx, { indexedBlock: fact.origin.blockNumber });
    });
  }

  return {
    async syncStatus(caller, id, ctx) {
      const { project, permission } = await findVisible(projects, caller, id);
      requireWriter(caller);
      const byRole = caller.role === "Admin" || caller.role === "Whitelist" || caller.role === "Viewer";
      if (!byRole && !isAccepted(permission)) {
        throw ProjectErrors.notMember("Only an Admin, Whitelist, Viewer or a member may sync the status.");
      }
      const { isApproved } = await ask(() => index.evaluation(chainHashOf(project.fileHash), ctx));
      const status = statusOfEvaluation(isApproved);
      return update(
        caller,
        id,
        "status",
        (p) => {
          p.status = status;
        },
        ctx,
      );
    },

    async syncAuction(caller, id, ctx) {
      const { project, permission } = await findVisible(projects, caller, id);
      requireWriter(caller);
      if (!isAccepted(permission)) throw ProjectErrors.notMember();
      const state = await ask(() => index.auction(chainHashOf(project.fileHash), ctx));
      return update(
        caller,
        id,
        "auction",
        (p) => {
          p.isAuctionCreated = p.isAuctionCreated || state.isAuctionCreated;
          p.isAuctionStarted = p.isAuctionStarted || state.isAuctionStarted;
          if (state.auctionStatus !== null) p.auctionStatus = state.auctionStatus;
        },
        ctx,
      );
    },

    // The first evaluation of a hash decides: a later one changes nothing, an earlier one arriving late wins.
    applyEvaluation: (fact, ctx) => {
      const status = statusOfEvaluation(fact.isApproved);
      return applyOnce(fact, "evaluation", status, ctx, (p) => {
        const at = { block: fact.origin.blockNumber, logIndex: fact.origin.logIndex };
        const held = positionOf(p.evaluationBlock, p.evaluationLogIndex);
        if (held && !before(at, held)) return;
        p.status = status;
        p.evaluationBlock = at.block;
        p.evaluationLogIndex = at.logIndex;
      });
    },

    // Created never goes back; the position only moves forward.
    applyAuctionCreated: (fact, ctx) =>
      applyOnce(fact, "auction-created", null, ctx, (p) => {
        p.isAuctionCreated = true;
        const at = { block: fact.origin.blockNumber, logIndex: fact.origin.logIndex };
        const held = positionOf(p.auctionBlock, p.auctionLogIndex);
        if (!held || before(held, at)) {
          p.auctionBlock = at.block;
          p.auctionLogIndex = at.logIndex;
        }
      }),

    // Only a status newer than the one held applies; a status past Off means the auction started.
    applyAuctionStatus: (fact, ctx) =>
      applyOnce(fact, "auction-status", fact.status, ctx, (p) => {
        const at = { block: fact.origin.blockNumber, logIndex: fact.origin.logIndex };
        const held = positionOf(p.auctionBlock, p.auctionLogIndex);
        if (held && !before(held, at) && p.auctionStatus !== null) return;
        p.isAuctionCreated = true;
        p.auctionStatus = fact.status as AuctionStatus;
        if (fact.status !== "Off") p.isAuctionStarted = true;
        p.auctionBlock = at.block;
        p.auctionLogIndex = at.logIndex;
      }),

    // A bid moves no field: recorded like any fact (a reorg may retract it), announced as auction activity.
    // Not in the ledger: nothing to recompute if a reorg takes it back.
    async applyAuctionActivity(fact, ctx) {
      await projects.once(consumer, claimOf(factKeyOf(fact.origin)), ctx, async (t) => {
        const project = await t.lockByFileHash(fileHashOfChain(fact.projectHash));
        if (!project) return;
        await changeAndAnnounce(t, project, "auction", () => {}, ctx, {
          indexedBlock: fact.origin.blockNumber,
          always: true,
        });
      });
    },

    // Only the fields of the retracted kind are recomputed: the others may hold what "sync now" read.
    async applyRetraction(fact, ctx) {
      const kind = factKindOf(fact.retracted);
      if (!kind) return; // a fact that sets no project field
      const key = factKeyOf(fact.origin);
      await projects.once(consumer, `retracted:${claimOf(key)}`, ctx, async (t) => {
        const { projectHash } = await t.retractFact(key, kind, fact.origin.blockNumber);
        if (projectHash === null) return; // not applied here (yet): the tombstone stops it
        await t.lockHash(projectHash);
        const project = await t.lockByFileHash(projectHash);
        if (!project) return;
        const standing = await t.standingFacts(projectHash);
        const fields = kind === "evaluation" ? evaluationFieldsOf(standing) : auctionFieldsOf(standing);
        await changeAndAnnounce(
          t,
          project,
          kind === "evaluation" ? "status" : "auction",
          (p) => {
            Object.assign(p, fields);
          },
          ctx,
          { indexedBlock: fact.origin.blockNumber },
        );
        ctx.log.info({ key, kind, projectId: project.id }, "chain fact retracted: project fields recomputed");
      });
    },
  };
}

const factKeyOf = (origin: {
  chainId: number;
  txHash: string;
  logIndex: number;
  blockHash: string;
}): FactKey => ({
  chainId: origin.chainId,
  txHash: origin.txHash.toLowerCase(),
  logIndex: origin.logIndex,
  blockHash: origin.blockHash.toLowerCase(),
});
const claimOf = (k: FactKey) => `${k.chainId}:${k.txHash}:${k.logIndex}:${k.blockHash}`;
