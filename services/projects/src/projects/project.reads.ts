import { type Caller, type ProjectStatus, ProjectsRpc, type ResponseOf } from "@fundraise/protocol";
import type { HotReads } from "./hot-reads.ts";
import { requireRole } from "./project.access.ts";
import { ProjectErrors } from "./project.errors.ts";
import { type ProjectDtoOut, toProjectDto } from "./project.mapper.ts";
import type { ProjectRepository } from "./project.repository.ts";
import { MAX_TOP } from "./project.validation.ts";
import { findVisible, scopeOf, sharedListOf } from "./visibility.ts";

/** What the project reads answer: the lists and the single read, each as rules.md §4 shows it. */
export interface ProjectReads {
  list(caller: Caller | null): Promise<ProjectDtoOut[]>;
  get(caller: Caller | null, id: number): Promise<ProjectDtoOut>;
  byStatus(caller: Caller | null, status: ProjectStatus): Promise<ProjectDtoOut[]>;
  top(caller: Caller | null, count: number): Promise<ProjectDtoOut[]>;
  hashes(caller: Caller, onlyAuctionsStarted: boolean): Promise<string[]>;
  /** Which of these contents a project holds (the storage service's orphan reconciliation asks). */
  heldContent(fileHashes: string[]): Promise<string[]>;
  viewerQueue(caller: Caller): Promise<ProjectDtoOut[]>;
  listPermissioned(caller: Caller): Promise<ProjectDtoOut[]>;
  listInvited(caller: Caller): Promise<ProjectDtoOut[]>;
  /** The caller's shared lists' name and the table's version, or null (protocol `listTag`). */
  listTag(caller: Caller | null): Promise<string | null>;
  /** Projects with their members, for the event stream (which applies the visibility rule per subscriber). */
  views(ids: number[]): Promise<ProjectViewOut[]>;
}

export type ProjectViewOut = ResponseOf<typeof ProjectsRpc.views>[number];

/**
 * The reads of projects (no SQL, no bus): what each caller may see comes from visibility.ts; the
 * anonymous and role lists are answered from memory while the project table is unchanged (hot-reads.ts).
 */
export function createProjectReads(deps: { projects: ProjectRepository; hotReads: HotReads }): ProjectReads {
  const { projects, hotReads } = deps;
  return {
    async list(caller) {
      const scope = scopeOf(caller);
      return hotReads.read(scope, "list", async () =>
        (await projects.list(scope, { order: "id" })).map((p) => toProjectDto(p)),
      );
    },

    async get(caller, id) {
      return toProjectDto((await findVisible(projects, caller, id)).project);
    },

    async byStatus(caller, status) {
      const scope = scopeOf(caller);
      return hotReads.read(scope, `status:${status}`, async () =>
        (await projects.list(scope, { status, order: "id" })).map((p) => toProjectDto(p)),
      );
    },

    // The first MAX_TOP are read once; any n is a prefix of them.
    async top(caller, count) {
      if (count <= 0) return [];
      const scope = scopeOf(caller);
      const top = await hotReads.read(scope, "top", async () =>
        (await projects.list(scope, { order: "top", limit: MAX_TOP })).map((p) => toProjectDto(p)),
      );
      return top.slice(0, Math.min(count, MAX_TOP));
    },

    heldContent: (fileHashes) => projects.heldFileHashes(fileHashes),

    async hashes(caller, onlyAuctionsStarted) {
      if (!onlyAuctionsStarted && caller.role !== "Admin") {
        throw ProjectErrors.roleForbidden("Only an Admin may list every file hash.");
      }
      return projects.hashes(onlyAuctionsStarted);
    },

    async viewerQueue(caller) {
      requireRole(ProjectsRpc.viewerQueue, caller, "review proposals");
      return (await projects.awaitingReview()).map((p) => toProjectDto(p));
    },

    async listPermissioned(caller) {
      return (await projects.projectsOfUser(caller.userId, true)).map((p) => toProjectDto(p));
    },

    async listTag(caller) {
      const shared = sharedListOf(scopeOf(caller));
      return shared === null ? null : `${shared}@${await projects.listVersion()}`;
    },

    async views(ids) {
      const [found, members] = await Promise.all([projects.findByIds(ids), projects.memberIdsOf(ids)]);
      return found.map((p) => ({ project: toProjectDto(p), memberIds: members.get(p.id) ?? [] }));
    },

    async listInvited(caller) {
      return (await projects.projectsOfUser(caller.userId, false)).map((p) => toProjectDto(p));
    },
  };
}
