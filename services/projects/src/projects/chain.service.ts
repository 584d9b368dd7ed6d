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
import { findVisible, isAccepted } from "./project.access.ts";
import type { Project } from "./project.entity.ts";
import { ProjectErrors } from "./project.errors.ts";
import { type ProjectDtoOut, toProjectDto } from "./project.mapper.ts";
import type { OpContext } from "./project.ports.ts";
import type { ProjectRepository } from "./project.repository.ts";

export type Evaluation = ResponseOf<typeof ChainRpc.evaluation>;
export type AuctionState = ResponseOf<typeof ChainRpc.auctionByHash>;

/** The chain index (the chain-indexer's RPC), as "sync now" needs it; app.ts wires it to ChainRpc. */
export interface ChainIndex {
  evaluation(projectHash: string, ctx: OpContext): Promise<Evaluation>;
  auction(projectHash: string, ctx: OpContext): Promise<AuctionState>;
}

type Position = { block: number; logIndex: number };
type FactContext = Pick<MessageContext, "messageId" | "log">;

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

/** The chain-derived rules of behaviour.md §4 and §6 (no SQL, no bus). */
export function createChainSync(deps: {
  projects: ProjectRepository;
  index: ChainIndex;
  consumer: string;
}): ChainSync {
  const { projects, index, consumer } = deps;

  /** The index answers through the chain-indexer; while none runs, "sync now" says so (503). */
  async function ask<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (error) {
      if (isAppError(error) && error.kind === "unavailable") {
        throw errors.unavailable(
          ErrorCode.CHAIN_UNAVAILABLE,
          "The chain index is not available, so the project cannot be synced with the chain now; " +
            "the chain's facts still reach the project as they are indexed.",
          { cause: error },
        );
      }
      throw error;
    }
  }

  async function update(id: number, change: (project: Project) => void): Promise<ProjectDtoOut> {
    return projects.transaction(async (t) => {
      const project = await t.lockById(id);
      if (!project) throw ProjectErrors.notFound();
      change(project);
      await t.save();
      return toProjectDto(project);
    });
  }

  /** Applies a chain fact about the project with this hash once per (chainId, txHash, logIndex). */
  async function applyOnce(
    fact: { origin: { chainId: number; txHash: string; logIndex: number }; projectHash: string },
    ctx: FactContext,
    change: (project: Project) => void,
  ): Promise<void> {
    const { chainId, txHash, logIndex } = fact.origin;
    const key = `${chainId}:${txHash.toLowerCase()}:${logIndex}`;
    await projects.once(consumer, key, ctx, async (t) => {
      const project = await t.lockByFileHash(fileHashOfChain(fact.projectHash));
      if (!project) {
        ctx.log.debug({ key, projectHash: fact.projectHash }, "chain fact for a hash no project has");
        return;
      }
      change(project);
      await t.save();
    });
  }

  return {
    async syncStatus(caller, id, ctx) {
      const { project, permission } = await findVisible(projects, caller, id);
      const byRole = caller.role === "Admin" || caller.role === "Whitelist" || caller.role === "Viewer";
      if (!byRole && !isAccepted(permission)) {
        throw ProjectErrors.notMember("Only an Admin, Whitelist, Viewer or a member may sync the status.");
      }
      const { isApproved } = await ask(() => index.evaluation(chainHashOf(project.fileHash), ctx));
      const status = isApproved === null ? "Pending" : isApproved ? "Approved" : "Rejected";
      return update(id, (p) => {
        p.status = status;
      });
    },

    async syncAuction(caller, id, ctx) {
      const { project, permission } = await findVisible(projects, caller, id);
      if (!isAccepted(permission)) throw ProjectErrors.notMember();
      const state = await ask(() => index.auction(chainHashOf(project.fileHash), ctx));
      return update(id, (p) => {
        p.isAuctionCreated = p.isAuctionCreated || state.isAuctionCreated;
        p.isAuctionStarted = p.isAuctionStarted || state.isAuctionStarted;
        if (state.auctionStatus !== null) p.auctionStatus = state.auctionStatus;
      });
    },

    // The first evaluation of a hash decides: a later one changes nothing, an earlier one arriving late wins.
    applyEvaluation: (fact, ctx) =>
      applyOnce(fact, ctx, (p) => {
        const at = { block: fact.origin.blockNumber, logIndex: fact.origin.logIndex };
        const held = positionOf(p.evaluationBlock, p.evaluationLogIndex);
        if (held && !before(at, held)) return;
        p.status = fact.isApproved ? "Approved" : "Rejected";
        p.evaluationBlock = at.block;
        p.evaluationLogIndex = at.logIndex;
      }),

    // Created never goes back; the position only moves forward.
    applyAuctionCreated: (fact, ctx) =>
      applyOnce(fact, ctx, (p) => {
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
      applyOnce(fact, ctx, (p) => {
        const at = { block: fact.origin.blockNumber, logIndex: fact.origin.logIndex };
        const held = positionOf(p.auctionBlock, p.auctionLogIndex);
        if (held && !before(held, at) && p.auctionStatus !== null) return;
        p.isAuctionCreated = true;
        p.auctionStatus = fact.status as AuctionStatus;
        if (fact.status !== "Off") p.isAuctionStarted = true;
        p.auctionBlock = at.block;
        p.auctionLogIndex = at.logIndex;
      }),
  };
}
