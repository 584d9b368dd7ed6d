import { type Caller, ProjectsEvents, ProjectsRpc, type RequestOf } from "@fundraise/protocol";
import { announce, audienceOf } from "./announce.ts";
import { evaluationFieldsOf } from "./chain-facts.ts";
import type { HotReads } from "./hot-reads.ts";
import { isAccepted, requireLive, requireRole, requireWriter } from "./project.access.ts";
import {
  dropContent,
  RELEASE_LIMITS,
  refuseReleased,
  requireNotReleased,
  takeContent,
  takenContent,
} from "./project.content.ts";
import type { Project } from "./project.entity.ts";
import { ProjectErrors } from "./project.errors.ts";
import { type ProjectDtoOut, toProjectDto } from "./project.mapper.ts";
import type { OpContext } from "./project.ports.ts";
import { createProjectReads, type ProjectReads } from "./project.reads.ts";
import type { ProjectRepository, ProjectTx } from "./project.repository.ts";
import { parseMarkdown, parseName, parseRating, parseText } from "./project.validation.ts";
import { isAwaitingReview } from "./review-queue.ts";
import { findVisible } from "./visibility.ts";

export type ProjectWrite = RequestOf<typeof ProjectsRpc.add>["project"];

export interface ProjectServiceDeps {
  projects: ProjectRepository;
  /** Projects that may wait for a viewer at once (rules.md §4.6: 100). */
  reviewQueueMax: number;
  /** Projects one proposer may have waiting for a viewer at once (rules.md §8.8: 5). */
  reviewSharePerProposer: number;
  /** The hot lists, answered from memory while the project table is unchanged. */
  hotReads: HotReads;
}

export interface ProjectService extends ProjectReads {
  /** `existing`: the same proposer's identical Add made it minutes ago (rules.md §8.14). */
  add(caller: Caller, write: ProjectWrite, ctx: OpContext): Promise<ProjectDtoOut & { existing?: boolean }>;
  update(caller: Caller, write: ProjectWrite, ctx: OpContext): Promise<ProjectDtoOut>;
  delete(caller: Caller, id: number, ctx: OpContext): Promise<void>;
  rate(caller: Caller, id: number, rating: number, ctx: OpContext): Promise<ProjectDtoOut>;
  /** true: accepted by the caller; false: the proposal is removed with its content (answers null). */
  viewerReply(caller: Caller, id: number, reply: boolean, ctx: OpContext): Promise<ProjectDtoOut | null>;
  updateMarkdown(caller: Caller, id: number, markdown: string, ctx: OpContext): Promise<ProjectDtoOut>;
}

/** How long an identical Add of the same proposer answers the project it made (rules.md §8.14). */
const RETRY_WINDOW_MS = 10 * 60_000;

/**
 * The rules of rules.md §4 (no SQL, no bus). A write's content arrives as a reference: the gateway
 * added it to IPFS pinned (ADR 0027). The write checks everything once, in one transaction under the
 * review queue's lock and the content's, and announces the content it takes (`content.taken`, for the
 * storage service's inventory) and lets go of (`content.dropped`: a deleted project's, a replaced file),
 * in the same transaction: the storage service unpins only what a release here let go (project.content.ts),
 * so no project ever holds content an unpin took away. The reads are project.reads.ts'.
 */
export function createProjectService(deps: ProjectServiceDeps): ProjectService {
  const { projects, reviewQueueMax, reviewSharePerProposer } = deps;

  /**
   * A project joins the review queue (an Add, or a new file): refused when the queue is full (503) or the
   * proposer already has their share of it waiting (429). Under the queue's lock, inside the transaction.
   */
  function checkQueueRoom(awaiting: number, awaitingBy: number): void {
    if (awaiting >= reviewQueueMax) throw ProjectErrors.reviewersBusy(reviewQueueMax);
    if (awaitingBy >= reviewSharePerProposer) throw ProjectErrors.reviewShareFull(reviewSharePerProposer);
  }
  async function requireQueueRoom(
    t: Pick<ProjectTx, "countAwaitingReview" | "countAwaitingReviewBy">,
    proposerAddress: string,
  ): Promise<void> {
    checkQueueRoom(await t.countAwaitingReview(), await t.countAwaitingReviewBy(proposerAddress));
  }

  /** Deletes the project (its permissions and ratings with it) and announces it, its content let go. */
  async function removeProject(t: ProjectTx, project: Project, reason: string, ctx: OpContext) {
    const { id: projectId, fileHash } = project;
    const before = await audienceOf(t, project);
    t.remove(project);
    await t.save();
    await t.emit(ProjectsEvents.deleted, { projectId, fileHash }, ctx);
    await dropContent(t, projectId, fileHash, reason, ctx);
    await announce(t, projectId, "deleted", before, ctx);
  }

  /** A write by an accepted member: 404 when the caller cannot see the project, then 403 (Blacklist, not a member). */
  async function requireMember(caller: Caller, id: number) {
    const seen = await findVisible(projects, caller, id);
    requireWriter(caller);
    if (!isAccepted(seen.permission)) throw ProjectErrors.notMember();
    return seen;
  }

  return {
    ...createProjectReads(deps),

    async add(caller, write, ctx) {
      requireWriter(caller);
      const name = parseName(write.projectName);
      const markdown = parseMarkdown(write.markDown ?? "");
      const description =
        write.projectDescription === null ? null : parseText("/projectDescription", write.projectDescription);
      const content = write.content && takenContent(write.content);
      if (!content) throw ProjectErrors.invalid("/fileHex", "is required");
      // The existing client retries an Add whose answer was lost without a key: the same proposer, name and
      // content within 10 minutes is that project again, not a conflict (also while the first commits).
      const retried = (named: Project | null) =>
        named !== null &&
        named.proposerAddress === caller.address &&
        named.cid === content.cid &&
        Date.now() - named.createdAt.getTime() <= RETRY_WINDOW_MS;
      return projects.transaction(async (t) => {
        // One statement takes the locks (the review queue's, the proposer's fence, the content's), one reads
        // every fact the rules below decide on, one writes the project and its Owner.
        await t.lockForAdd(caller.userId, content.fileHash);
        const facts = await t.addFacts(
          { userId: caller.userId, name, proposerAddress: caller.address, fileHash: content.fileHash },
          RELEASE_LIMITS,
        );
        // The proposer becomes the Owner: not once a deletion fenced them.
        if (facts.fenced) throw ProjectErrors.accountGone();
        const named = facts.nameTaken ? await t.findByName(name) : null;
        if (named && retried(named)) return { ...toProjectDto(named), existing: true };
        checkQueueRoom(facts.awaiting, facts.awaitingBy);
        if (named) throw ProjectErrors.nameTaken();
        if (facts.fileTaken) throw ProjectErrors.fileTaken();
        refuseReleased(content, facts.release, facts.nowMs);
        const { fileHash, cid, imagePath } = content;
        const project = await t.insertProject(
          { name, description, markdown, fileHash, cid, imagePath, proposerAddress: caller.address },
          caller.userId,
        );
        const projectId = project.id;
        await t.emit(
          ProjectsEvents.created,
          { projectId, fileHash, ownerId: caller.userId, projectName: name },
          ctx,
        );
        await takeContent(t, projectId, content, "project:add", ctx);
        await announce(t, projectId, "created", null, ctx);
        return toProjectDto(project);
      });
    },

    async update(caller, write, ctx) {
      const id = write.projectID;
      if (id === undefined || id < 1) throw ProjectErrors.invalid("/projectID", "is required");
      const { project } = await requireMember(caller, id);
      const name = parseName(write.projectName);
      const markdown = write.markDown === null ? undefined : parseMarkdown(write.markDown);
      const description =
        write.projectDescription === null ? null : parseText("/projectDescription", write.projectDescription);
      const content = write.content && takenContent(write.content);
      if (content === null && write.content) {
        throw ProjectErrors.invalid("/imageUrl", "an image changes only with the file: send fileHex too");
      }
      if (content && project.isAuctionCreated)
        throw ProjectErrors.auctionExists("its file can no longer change");
      return projects.transaction(async (t) => {
        // A new file joins the review queue: counted under its lock, taken before the project's as Add does.
        if (content) await t.lockReviewQueue();
        await requireLive(t, caller);
        const locked = await t.lockById(id);
        if (!locked) throw ProjectErrors.notFound();
        const before = await audienceOf(t, locked);
        if (await t.nameTaken(name, id)) throw ProjectErrors.nameTaken();
        locked.name = name;
        if (description !== null) locked.description = description;
        if (markdown !== undefined) locked.markdown = markdown;
        if (content && content.fileHash !== locked.fileHash) {
          if (locked.isAuctionCreated) throw ProjectErrors.auctionExists("its file can no longer change");
          await t.lockHash(content.fileHash);
          if (await t.fileHashTaken(content.fileHash, id)) throw ProjectErrors.fileTaken();
          if (!isAwaitingReview(locked)) await requireQueueRoom(t, locked.proposerAddress);
          await requireNotReleased(t, content);
          await dropContent(t, id, locked.fileHash, `project:${id}:replaced`, ctx);
          await takeContent(t, id, content, `project:${id}:update`, ctx);
          locked.fileHash = content.fileHash;
          locked.cid = content.cid;
          locked.imagePath = content.imagePath;
          // A new file is a new proposal (rules.md §8.4): the chain's evaluation of this hash, if any,
          // and a viewer's review of it again.
          Object.assign(locked, evaluationFieldsOf(await t.standingFacts(content.fileHash)));
          locked.viewerAccepted = false;
          locked.viewerAcceptedAddress = null;
        }
        await t.save();
        await announce(t, id, "updated", before, ctx);
        return toProjectDto(locked);
      });
    },

    async delete(caller, id, ctx) {
      const { permission } = await findVisible(projects, caller, id);
      requireWriter(caller);
      const owner = isAccepted(permission) && permission.role === "Owner";
      if (caller.role !== "Admin" && !owner) {
        throw ProjectErrors.notMember("Only an Admin or the project's Owner may delete it.");
      }
      await projects.transaction(async (t) => {
        await requireLive(t, caller);
        const project = await t.lockById(id);
        if (!project) throw ProjectErrors.notFound();
        if (project.isAuctionCreated)
          throw ProjectErrors.auctionExists("the project can no longer be deleted");
        await removeProject(t, project, `project:${id}:deleted`, ctx);
      });
    },

    async rate(caller, id, rating, ctx) {
      const value = parseRating(rating);
      const baseRefusal = () => ProjectErrors.roleForbidden("Base users may rate Approved projects only.");
      const { project } = await findVisible(projects, caller, id);
      requireWriter(caller);
      if (caller.role === "Base" && project.status !== "Approved") throw baseRefusal();
      return projects.transaction(async (t) => {
        // A rating row of the caller: not once a deletion fenced them.
        await requireLive(t, caller);
        const locked = await t.lockById(id);
        if (!locked) throw ProjectErrors.notFound();
        if (caller.role === "Base" && locked.status !== "Approved") throw baseRefusal();
        const before = await audienceOf(t, locked);
        await t.upsertRating(id, caller.userId, value);
        locked.rating = await t.meanRating(id);
        await t.save();
        await announce(t, id, "rated", before, ctx);
        return toProjectDto(locked);
      });
    },

    async viewerReply(caller, id, reply, ctx) {
      requireRole(ProjectsRpc.viewerReply, caller, "review proposals");
      return projects.transaction(async (t) => {
        await requireLive(t, caller);
        const project = await t.lockById(id);
        if (!project) throw ProjectErrors.notFound();
        // No self-review: a member or invitee of the project (any permission row) does not judge it.
        if (await t.lockPermission(id, caller.userId)) throw ProjectErrors.selfReview();
        if (project.viewerAccepted) throw ProjectErrors.alreadyReviewed();
        if (reply) {
          const before = await audienceOf(t, project);
          project.viewerAccepted = true;
          project.viewerAcceptedAddress = caller.address;
          await t.save();
          await announce(t, id, "viewer-accepted", before, ctx);
          return toProjectDto(project);
        }
        if (project.isAuctionCreated)
          throw ProjectErrors.auctionExists("the project can no longer be removed");
        await removeProject(t, project, `project:${id}:rejected-by-viewer`, ctx);
        return null;
      });
    },

    async updateMarkdown(caller, id, markdownInput, ctx) {
      const markdown = parseMarkdown(markdownInput);
      await requireMember(caller, id);
      return projects.transaction(async (t) => {
        await requireLive(t, caller);
        const project = await t.lockById(id);
        if (!project) throw ProjectErrors.notFound();
        const before = await audienceOf(t, project);
        project.markdown = markdown;
        await t.save();
        await announce(t, id, "updated", before, ctx);
        return toProjectDto(project);
      });
    },
  };
}
