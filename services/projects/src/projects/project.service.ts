import { type Caller, ProjectsEvents, type ProjectsRpc, type RequestOf } from "@fundraise/protocol";
import { announce, audienceOf } from "./announce.ts";
import { evaluationFieldsOf } from "./chain-facts.ts";
import type { HotReads } from "./hot-reads.ts";
import { isAccepted, requireLive, requireWriter } from "./project.access.ts";
import { createDiscardContent, withFile } from "./project.content.ts";
import type { Project } from "./project.entity.ts";
import { ProjectErrors } from "./project.errors.ts";
import { type ProjectDtoOut, toProjectDto } from "./project.mapper.ts";
import type { ContentStore, OpContext } from "./project.ports.ts";
import { createProjectReads, isReviewer, type ProjectReads } from "./project.reads.ts";
import type { ProjectRepository, ProjectTx } from "./project.repository.ts";
import { parseMarkdown, parseName, parseRating, parseText } from "./project.validation.ts";
import { findVisible } from "./visibility.ts";

export type ProjectWrite = RequestOf<typeof ProjectsRpc.add>["project"];

export interface ProjectServiceDeps {
  projects: ProjectRepository;
  content: ContentStore;
  /** Projects that may wait for a viewer at once (behaviour.md §4: 100). */
  reviewQueueMax: number;
  /** Projects one proposer may have waiting for a viewer at once (behaviour.md §8: 5). */
  reviewSharePerProposer: number;
  /** The hot lists, answered from memory while the project table is unchanged. */
  hotReads: HotReads;
}

export interface ProjectService extends ProjectReads {
  /** `existing`: the same proposer's identical Add made it minutes ago (behaviour.md §8). */
  add(caller: Caller, write: ProjectWrite, ctx: OpContext): Promise<ProjectDtoOut & { existing?: boolean }>;
  update(caller: Caller, write: ProjectWrite, ctx: OpContext): Promise<ProjectDtoOut>;
  delete(caller: Caller, id: number, ctx: OpContext): Promise<void>;
  rate(caller: Caller, id: number, rating: number, ctx: OpContext): Promise<ProjectDtoOut>;
  /** true: accepted by the caller; false: the proposal is removed with its content (answers null). */
  viewerReply(caller: Caller, id: number, reply: boolean, ctx: OpContext): Promise<ProjectDtoOut | null>;
  updateMarkdown(caller: Caller, id: number, markdown: string, ctx: OpContext): Promise<ProjectDtoOut>;
}

/** How long an identical Add of the same proposer answers the project it made (behaviour.md §8). */
const RETRY_WINDOW_MS = 10 * 60_000;

/**
 * The rules of behaviour.md §4 (no SQL, no bus). A write's content arrives as a reference: the gateway
 * added it to IPFS unpinned. The storage service pins it once the write passed its checks, and the row is
 * written after: a write refused before leaves nothing pinned. A failure after the pin removes the
 * content again, unless a project holds the same content (the same bytes uploaded twice are one pin).
 * Content of a deleted project, or a file replaced by Update, is removed after the commit; a removal
 * that fails leaves an orphan pin (logged) for the storage service's reconciliation, never a project
 * without its content. The reads are project.reads.ts'.
 */
export function createProjectService(deps: ProjectServiceDeps): ProjectService {
  const { projects, content, reviewQueueMax, reviewSharePerProposer } = deps;

  /**
   * A project joins the review queue (an Add, or a new file): refused when the queue is full (503) or the
   * proposer already has their share of it waiting (429). Under the queue's lock inside a transaction;
   * without one (`t` = the repository), the cheap check before an upload.
   */
  async function requireQueueRoom(
    t: Pick<ProjectTx, "countAwaitingReview" | "countAwaitingReviewBy">,
    proposerAddress: string,
  ): Promise<void> {
    if ((await t.countAwaitingReview()) >= reviewQueueMax) throw ProjectErrors.reviewersBusy(reviewQueueMax);
    if ((await t.countAwaitingReviewBy(proposerAddress)) >= reviewSharePerProposer)
      throw ProjectErrors.reviewShareFull(reviewSharePerProposer);
  }

  /** Removes content no project holds; never throws (the caller's answer does not depend on it). */
  const discard = createDiscardContent(deps);

  /** Deletes the project (its permissions and ratings with it) and announces it; answers its fileHash. */
  async function removeProject(t: ProjectTx, project: Project, ctx: OpContext): Promise<string> {
    const { id: projectId, fileHash } = project;
    const before = await audienceOf(t, project);
    t.remove(project);
    await t.save();
    await t.emit(ProjectsEvents.deleted, { projectId, fileHash }, ctx);
    await announce(t, projectId, "deleted", before, ctx);
    return fileHash;
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
      const added = write.content && withFile(write.content);
      if (!added) throw ProjectErrors.invalid("/fileHex", "is required");
      // The existing client retries an Add whose answer was lost without a key: the same proposer, name and
      // content within 10 minutes is that project again, not a conflict. Asked again under the lock: the
      // retry may arrive while the first Add is still committing.
      const retried = (named: Project | null) =>
        named !== null &&
        named.proposerAddress === caller.address &&
        named.cid === added.cid &&
        Date.now() - named.createdAt.getTime() <= RETRY_WINDOW_MS;
      const same = await projects.findByName(name);
      if (same && retried(same)) return { ...toProjectDto(same), existing: true };
      // Cheap refusals before the upload; the transaction checks again under the queue's lock. The name
      // from the read above: asking again could see the first Add commit in between and refuse its retry.
      if (same) throw ProjectErrors.nameTaken();
      await requireQueueRoom(projects, caller.address);
      const uploaded = await content.store(added, "project:add", ctx);
      try {
        return await projects.transaction(async (t) => {
          await t.lockReviewQueue();
          // The proposer becomes the Owner: not once a deletion fenced them.
          await requireLive(t, caller);
          const named = await t.findByName(name);
          if (named && retried(named)) return { ...toProjectDto(named), existing: true };
          await requireQueueRoom(t, caller.address);
          if (named) throw ProjectErrors.nameTaken();
          if (await t.fileHashTaken(uploaded.fileHash)) throw ProjectErrors.fileTaken();
          const project = t.createProject({
            name,
            description,
            markdown,
            fileHash: uploaded.fileHash,
            cid: uploaded.cid,
            imagePath: uploaded.imagePath,
            proposerAddress: caller.address,
          });
          await t.save();
          t.createPermission({
            projectId: project.id,
            userId: caller.userId,
            role: "Owner",
            isAccepted: true,
          });
          await t.save();
          await t.emit(
            ProjectsEvents.created,
            { projectId: project.id, fileHash: project.fileHash, ownerId: caller.userId, projectName: name },
            ctx,
          );
          await announce(t, project.id, "created", null, ctx);
          return toProjectDto(project);
        });
      } catch (error) {
        await discard(uploaded.fileHash, "project:add-failed", ctx);
        throw error;
      }
    },

    async update(caller, write, ctx) {
      const id = write.projectID;
      if (id === undefined || id < 1) throw ProjectErrors.invalid("/projectID", "is required");
      const { project } = await requireMember(caller, id);
      const name = parseName(write.projectName);
      const markdown = write.markDown === null ? undefined : parseMarkdown(write.markDown);
      const description =
        write.projectDescription === null ? null : parseText("/projectDescription", write.projectDescription);
      const added = write.content && withFile(write.content);
      if (added === null && write.content) {
        throw ProjectErrors.invalid("/imageUrl", "an image changes only with the file: send fileHex too");
      }
      if (await projects.nameTaken(name, id)) throw ProjectErrors.nameTaken();
      if (added && project.isAuctionCreated)
        throw ProjectErrors.auctionExists("its file can no longer change");
      const uploaded = added ? await content.store(added, `project:${id}:update`, ctx) : null;
      try {
        const { dto, replaced } = await projects.transaction(async (t) => {
          // A new file joins the review queue: counted under its lock, taken before the project's as Add does.
          if (uploaded) await t.lockReviewQueue();
          await requireLive(t, caller);
          const locked = await t.lockById(id);
          if (!locked) throw ProjectErrors.notFound();
          const before = await audienceOf(t, locked);
          if (await t.nameTaken(name, id)) throw ProjectErrors.nameTaken();
          locked.name = name;
          if (description !== null) locked.description = description;
          if (markdown !== undefined) locked.markdown = markdown;
          let replaced: string | null = null;
          if (uploaded && uploaded.fileHash !== locked.fileHash) {
            if (locked.isAuctionCreated) throw ProjectErrors.auctionExists("its file can no longer change");
            if (await t.fileHashTaken(uploaded.fileHash, id)) throw ProjectErrors.fileTaken();
            const waiting = locked.status === "Pending" && !locked.viewerAccepted;
            if (!waiting) await requireQueueRoom(t, locked.proposerAddress);
            replaced = locked.fileHash;
            await t.lockHash(uploaded.fileHash);
            locked.fileHash = uploaded.fileHash;
            locked.cid = uploaded.cid;
            locked.imagePath = uploaded.imagePath;
            // A new file is a new proposal (behaviour.md §8): the chain's evaluation of this hash, if any,
            // and a viewer's review of it again.
            Object.assign(locked, evaluationFieldsOf(await t.standingFacts(uploaded.fileHash)));
            locked.viewerAccepted = false;
            locked.viewerAcceptedAddress = null;
          }
          await t.save();
          await announce(t, id, "updated", before, ctx);
          return { dto: toProjectDto(locked), replaced };
        });
        if (replaced) await discard(replaced, `project:${id}:replaced`, ctx);
        return dto;
      } catch (error) {
        if (uploaded) await discard(uploaded.fileHash, `project:${id}:update-failed`, ctx);
        throw error;
      }
    },

    async delete(caller, id, ctx) {
      const { permission } = await findVisible(projects, caller, id);
      requireWriter(caller);
      const owner = isAccepted(permission) && permission.role === "Owner";
      if (caller.role !== "Admin" && !owner) {
        throw ProjectErrors.notMember("Only an Admin or the project's Owner may delete it.");
      }
      const fileHash = await projects.transaction(async (t) => {
        await requireLive(t, caller);
        const project = await t.lockById(id);
        if (!project) throw ProjectErrors.notFound();
        if (project.isAuctionCreated)
          throw ProjectErrors.auctionExists("the project can no longer be deleted");
        return removeProject(t, project, ctx);
      });
      await discard(fileHash, `project:${id}:deleted`, ctx);
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
      if (!isReviewer(caller))
        throw ProjectErrors.roleForbidden("Only a Viewer or an Admin may review proposals.");
      const outcome = await projects.transaction(async (t) => {
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
          return { dto: toProjectDto(project), removed: null };
        }
        if (project.isAuctionCreated)
          throw ProjectErrors.auctionExists("the project can no longer be removed");
        return { dto: null, removed: await removeProject(t, project, ctx) };
      });
      if (outcome.removed) await discard(outcome.removed, `project:${id}:rejected-by-viewer`, ctx);
      return outcome.dto;
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
