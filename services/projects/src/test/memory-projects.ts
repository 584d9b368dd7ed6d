import { createHash } from "node:crypto";
import { cidOfFileHash } from "@fundraise/ipfs";
import type { Caller, UserRole } from "@fundraise/protocol";
import {
  createMemoryStore,
  type Emitted,
  type MemoryTx,
  withCommitted,
} from "@fundraise/service-kit/testing";
import { createChainSync } from "../projects/chain.service.ts";
import type { StandingFact } from "../projects/chain-facts.ts";
import { createHotReads } from "../projects/hot-reads.ts";
import { createMembershipService } from "../projects/membership.service.ts";
import type { Permission, Project } from "../projects/project.entity.ts";
import { ProjectErrors } from "../projects/project.errors.ts";
import type { UserDirectory, UserDtoOut } from "../projects/project.ports.ts";
import type { ProjectRepository, ProjectTx } from "../projects/project.repository.ts";
import { createProjectService, type ProjectWrite } from "../projects/project.service.ts";
import { isAwaitingReview } from "../projects/review-queue.ts";
import { createUserFenceService } from "../projects/user-fence.service.ts";
import { inScope } from "../projects/visibility.ts";

interface State {
  projects: Map<number, Project>;
  permissions: Map<number, Permission>;
  /** `<projectId>:<userId>` → value. */
  ratings: Map<string, number>;
  fences: Map<number, { fencedAt: Date; deletedAt: Date | null }>;
  /** `<chainId>:<txHash>:<logIndex>:<blockHash>` → the ledger's row. */
  facts: Map<string, StandingFact & { projectHash: string | null; retracted: boolean }>;
  /** Releases of content, oldest first (content_release). */
  releases: { version: number; fileHash: string; releasedAt: number; confirmed: boolean }[];
  /** Moves with every committed transaction (the table's version, which every change moves). */
  version: number;
}

/**
 * FOR TESTS ONLY: the projects repository in memory (service-kit's MemoryStore: a transaction commits as
 * a whole or not at all, one at a time), for use-case tests without Postgres; the SQL, the locks under
 * concurrency and the triggers are the integration suites'. Lists apply the visibility rule itself
 * (visibility.ts `inScope`); the unique indexes (name case-insensitively, file hash, one row per project
 * and user) are checked on `save`.
 */
export interface MemoryProjects extends ProjectRepository {
  readonly projects: Map<number, Project>;
  readonly permissions: Map<number, Permission>;
  /** Events of committed transactions, oldest first. */
  readonly events: Emitted[];
}

const copyOf = (s: State): State => ({
  projects: new Map([...s.projects].map(([id, p]) => [id, { ...p }])),
  permissions: new Map([...s.permissions].map(([id, p]) => [id, { ...p }])),
  ratings: new Map(s.ratings),
  fences: new Map(s.fences),
  facts: new Map(s.facts),
  releases: s.releases.map((r) => ({ ...r })),
  version: s.version + 1,
});
const byId = <T extends { id: number }>(rows: Iterable<T>) => [...rows].sort((a, b) => a.id - b.id);
const waiting = isAwaitingReview;

export function createMemoryProjects(): MemoryProjects {
  const store = createMemoryStore<State>(
    {
      projects: new Map(),
      permissions: new Map(),
      ratings: new Map(),
      fences: new Map(),
      facts: new Map(),
      releases: [],
      version: 0,
    },
    copyOf,
  );
  let nextId = 1;

  const projectsOf = (s: State) => byId(s.projects.values());
  const permissionsOf = (s: State) => byId(s.permissions.values());
  const permission = (s: State, projectId: number, userId: number) =>
    permissionsOf(s).find((p) => p.projectId === projectId && p.userId === userId) ?? null;
  const nameTaken = (s: State, name: string, exceptId?: number) =>
    projectsOf(s).some((p) => p.name.toLowerCase() === name.toLowerCase() && p.id !== exceptId);
  const fileHashTaken = (s: State, fileHash: string, exceptId?: number) =>
    projectsOf(s).some((p) => p.fileHash === fileHash && p.id !== exceptId);
  const mean = (s: State, projectId: number) => {
    const values = [...s.ratings].filter(([key]) => key.startsWith(`${projectId}:`)).map(([, v]) => v);
    return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
  };
  const factKey = (k: { chainId: number; txHash: string; logIndex: number; blockHash: string }) =>
    `${k.chainId}:${k.txHash.toLowerCase()}:${k.logIndex}:${k.blockHash.toLowerCase()}`;

  function txOf({ state: s, emit, claimOnce }: MemoryTx<State>): ProjectTx {
    return {
      lockForAdd: async () => undefined,
      async addFacts({ userId, name, proposerAddress, fileHash }, limits) {
        const t = txOf({ state: s, emit, claimOnce, onRollback: () => undefined });
        return {
          fenced: s.fences.has(userId),
          nameTaken: nameTaken(s, name),
          awaiting: projectsOf(s).filter(waiting).length,
          awaitingBy: projectsOf(s).filter((p) => waiting(p) && p.proposerAddress === proposerAddress).length,
          fileTaken: fileHashTaken(s, fileHash),
          release: await t.releaseOf(fileHash, limits),
          nowMs: Date.now(),
        };
      },
      async insertProject(row, ownerId) {
        const t = txOf({ state: s, emit, claimOnce, onRollback: () => undefined });
        const project = t.createProject(row);
        await t.save();
        t.createPermission({ projectId: project.id, userId: ownerId, role: "Owner", isAccepted: true });
        await t.save();
        return project;
      },
      flush: async () => undefined,
      lockReviewQueue: async () => undefined,
      countAwaitingReview: async () => projectsOf(s).filter(waiting).length,
      countAwaitingReviewBy: async (proposer) =>
        projectsOf(s).filter((p) => waiting(p) && p.proposerAddress === proposer).length,
      lockHash: async () => undefined,
      fencedAmong: async (userIds) =>
        [...new Set(userIds)].filter((id) => s.fences.has(id)).sort((a, b) => a - b),
      lockUser: async () => undefined,
      ownsProject: async (userId) =>
        permissionsOf(s).some((p) => p.userId === userId && p.role === "Owner" && p.isAccepted),
      async fence(userId, deleted) {
        const held = s.fences.get(userId);
        s.fences.set(userId, {
          fencedAt: held?.fencedAt ?? new Date(),
          deletedAt: held?.deletedAt ?? (deleted ? new Date() : null),
        });
      },
      async unfence(userId) {
        const fence = s.fences.get(userId);
        if (!fence || fence.deletedAt !== null) return false;
        s.fences.delete(userId);
        return true;
      },
      lockById: async (id) => s.projects.get(id) ?? null,
      lockByFileHash: async (fileHash) => projectsOf(s).find((p) => p.fileHash === fileHash) ?? null,
      nameTaken: async (name, exceptId) => nameTaken(s, name, exceptId),
      findByName: async (name) =>
        projectsOf(s).find((p) => p.name.toLowerCase() === name.toLowerCase()) ?? null,
      fileHashTaken: async (fileHash, exceptId) => fileHashTaken(s, fileHash, exceptId),
      lockPermission: async (projectId, userId) => permission(s, projectId, userId),
      memberIds: async (projectId) =>
        [...s.permissions.values()]
          .filter((p) => p.projectId === projectId)
          .map((p) => p.userId)
          .sort((a, b) => a - b),
      createProject(row) {
        const now = new Date();
        const project = {
          id: nextId++,
          status: "Pending",
          viewerAccepted: false,
          viewerAcceptedAddress: null,
          rating: 0,
          isAuctionCreated: false,
          isAuctionStarted: false,
          auctionStatus: null,
          evaluationBlock: null,
          evaluationLogIndex: null,
          auctionBlock: null,
          auctionLogIndex: null,
          createdAt: now,
          updatedAt: now,
          ...row,
        } as unknown as Project;
        s.projects.set(project.id, project);
        return project;
      },
      createPermission(row) {
        const created = { id: nextId++, createdAt: new Date(), ...row } as Permission;
        s.permissions.set(created.id, created);
        return created;
      },
      remove(entity) {
        if ("fileHash" in entity) {
          s.projects.delete(entity.id);
          // The schema's cascades: the project's permissions and ratings go with it.
          for (const p of permissionsOf(s)) if (p.projectId === entity.id) s.permissions.delete(p.id);
          for (const key of s.ratings.keys()) if (key.startsWith(`${entity.id}:`)) s.ratings.delete(key);
        } else s.permissions.delete(entity.id);
      },
      upsertRating: async (projectId, userId, value) => void s.ratings.set(`${projectId}:${userId}`, value),
      meanRating: async (projectId) => mean(s, projectId),
      async removeUserRows(userId) {
        const rated = [...s.ratings.keys()].filter((key) => key.endsWith(`:${userId}`));
        for (const key of rated) s.ratings.delete(key);
        const held = permissionsOf(s).filter((p) => p.userId === userId);
        for (const p of held) s.permissions.delete(p.id);
        return {
          ratedProjectIds: [...new Set(rated.map((key) => Number(key.split(":")[0])))].sort((a, b) => a - b),
          ownerOf: held.filter((p) => p.role === "Owner").map((p) => p.projectId),
        };
      },
      async save() {
        const projects = projectsOf(s);
        for (const p of projects) {
          if (nameTaken(s, p.name, p.id)) throw ProjectErrors.nameTaken();
          if (fileHashTaken(s, p.fileHash, p.id)) throw ProjectErrors.fileTaken();
        }
        const pairs = permissionsOf(s).map((p) => `${p.projectId}:${p.userId}`);
        if (new Set(pairs).size !== pairs.length) throw ProjectErrors.invitationExists();
      },
      emit: async (event, payload) => emit(event, payload),
      async recordFact(key, fact) {
        const held = s.facts.get(factKey(key));
        const retracted = held?.retracted ?? false;
        s.facts.set(factKey(key), {
          kind: fact.kind,
          value: fact.value,
          block: fact.blockNumber,
          logIndex: key.logIndex,
          projectHash: fact.projectHash,
          retracted,
        });
        return { retracted };
      },
      async retractFact(key, kind, blockNumber) {
        const held = s.facts.get(factKey(key));
        s.facts.set(factKey(key), {
          kind,
          value: held?.value ?? null,
          block: blockNumber,
          logIndex: key.logIndex,
          projectHash: held?.projectHash ?? null,
          retracted: true,
        });
        return { projectHash: held?.projectHash ?? null };
      },
      standingFacts: async (projectHash) =>
        [...s.facts.values()]
          .filter((f) => f.projectHash === projectHash && !f.retracted)
          .map(({ kind, value, block, logIndex }) => ({ kind, value, block, logIndex })),
      claimOnce: async (consumer, messageKey) => claimOnce(consumer, messageKey),
      async releaseOf(fileHash, { memoryMs, windowMs }) {
        const now = Date.now();
        const kept = s.releases.filter((r) => r.fileHash === fileHash && r.releasedAt > now - memoryMs);
        if (kept.length === 0) return null;
        const open = kept.filter((r) => !r.confirmed).map((r) => r.releasedAt + windowMs - now);
        return { version: Math.max(...kept.map((r) => r.version)), waitMs: Math.max(0, ...open) };
      },
      nowMs: async () => Date.now(),
      async release(fileHash) {
        const version = (s.releases.at(-1)?.version ?? 0) + 1;
        s.releases.push({ version, fileHash, releasedAt: Date.now(), confirmed: false });
        return version;
      },
      async confirmReleases(releases) {
        for (const r of s.releases) {
          if (releases.some((c) => c.fileHash === r.fileHash && c.version === r.version)) r.confirmed = true;
        }
      },
    };
  }

  const transaction = <T>(work: (tx: ProjectTx) => Promise<T>) => store.transaction((tx) => work(txOf(tx)));
  const state = () => store.state;

  const repository: Omit<MemoryProjects, "projects" | "permissions" | "events"> = {
    transaction,
    once: (consumer, key, _ctx, work) =>
      transaction(async (t) => {
        if (!(await t.claimOnce(consumer, key))) return false;
        await work(t);
        return true;
      }),
    findById: async (id) => state().projects.get(id) ?? null,
    findByIds: async (ids) => projectsOf(state()).filter((p) => ids.includes(p.id)),
    async memberIdsOf(projectIds) {
      const members = new Map<number, number[]>();
      for (const p of byId(permissionsOf(state())).sort((a, b) => a.userId - b.userId)) {
        if (projectIds.includes(p.projectId))
          members.set(p.projectId, [...(members.get(p.projectId) ?? []), p.userId]);
      }
      return members;
    },
    listVersion: async () => state().version,
    findByFileHash: async (fileHash) => projectsOf(state()).find((p) => p.fileHash === fileHash) ?? null,
    nameTaken: async (name, exceptId) => nameTaken(state(), name, exceptId),
    findByName: async (name) =>
      projectsOf(state()).find((p) => p.name.toLowerCase() === name.toLowerCase()) ?? null,
    async list(scope, options) {
      const memberId = scope.all ? null : scope.memberId;
      const memberOf = new Set(
        permissionsOf(state())
          .filter((p) => memberId !== null && p.userId === memberId)
          .map((p) => p.projectId),
      );
      const listed = projectsOf(state()).filter(
        (p) =>
          inScope(scope, p, memberOf.has(p.id)) &&
          (options.status === undefined || p.status === options.status),
      );
      if (options.order === "top") {
        listed.sort(
          (a, b) =>
            Number(b.rating) - Number(a.rating) ||
            b.createdAt.getTime() - a.createdAt.getTime() ||
            b.id - a.id,
        );
      }
      return options.limit === undefined ? listed : listed.slice(0, options.limit);
    },
    async projectsOfUser(userId, accepted) {
      return permissionsOf(state())
        .filter((p) => p.userId === userId && p.isAccepted === accepted)
        .flatMap((p) => state().projects.get(p.projectId) ?? []);
    },
    awaitingReview: async () => projectsOf(state()).filter((p) => !p.viewerAccepted),
    hashes: async (onlyAuctionsStarted) =>
      projectsOf(state())
        .filter((p) => !onlyAuctionsStarted || p.isAuctionStarted)
        .map((p) => p.fileHash),
    heldFileHashes: async (fileHashes) =>
      projectsOf(state())
        .map((p) => p.fileHash)
        .filter((h) => fileHashes.includes(h)),
    permissionOf: async (projectId, userId) => permission(state(), projectId, userId),
    membersWithRole: async (projectId, roles) =>
      permissionsOf(state())
        .filter((p) => p.projectId === projectId && p.isAccepted && roles.includes(p.role as never))
        .sort((a, b) => Number(b.role === "Owner") - Number(a.role === "Owner")),
    pendingOfUser: async (userId) =>
      permissionsOf(state()).filter((p) => p.userId === userId && !p.isAccepted),
    isFenced: async (userId) => state().fences.has(userId),
    pendingFences: async (cutoff, limit) =>
      [...state().fences]
        .filter(([, f]) => f.deletedAt === null && f.fencedAt < cutoff)
        .sort(([, a], [, b]) => a.fencedAt.getTime() - b.fencedAt.getTime())
        .slice(0, limit)
        .map(([userId]) => userId),
  };
  return withCommitted(store, ["projects", "permissions"], repository);
}

/** The CIDv0 that stands for the bytes named `file` (the same name, the same bytes and CID). */
export const cidOfFile = (file: string) =>
  cidOfFileHash(createHash("sha256").update(file).digest("hex")).toString();

/** A write as the gateway hands it on; `file` names its bytes (the same name, the same bytes and CID). */
export function projectWrite(
  projectName: string,
  options: { file?: string; id?: number; markDown?: string; image?: boolean } = {},
): ProjectWrite {
  return {
    ...(options.id === undefined ? {} : { projectID: options.id }),
    projectName,
    projectDescription: null,
    markDown: options.markDown ?? null,
    content:
      options.file === undefined
        ? null
        : { cid: cidOfFile(options.file), fileBytes: 1, imageBytes: options.image ? 1 : null },
  };
}

/**
 * The projects service's use cases on memory: the repository above, and a user directory of
 * the people `person` makes (as the users service would answer for them). Also the fact at `block` that a
 * project hash was evaluated (as the indexer publishes it).
 */
export const evaluated = (fileHash: string, isApproved: boolean, block = 10) => ({
  origin: {
    chainId: 31337,
    txHash: `0x${block.toString(16).padStart(64, "0")}`,
    logIndex: 0,
    blockNumber: block,
    blockHash: `0x${block.toString(16).padStart(64, "b")}`,
  },
  projectHash: `0x${fileHash.toLowerCase()}`,
  isApproved,
});

export function projectsOnMemory(limits: { reviewQueueMax?: number; reviewSharePerProposer?: number } = {}) {
  const projects = createMemoryProjects();
  /** The content events committed, as the storage service would consume them: fileHashes in order. */
  const content = {
    get taken() {
      return projects.events
        .filter((e) => e.name === "projects.content.taken")
        .map((e) => e.payload.fileHash);
    },
    get dropped() {
      return projects.events
        .filter((e) => e.name === "projects.content.dropped")
        .map((e) => e.payload.fileHash);
    },
  };
  const people = new Map<number, UserDtoOut>();
  const users: UserDirectory = {
    byUsername: async (username) =>
      [...people.values()].find((u) => u.username?.toLowerCase() === username.toLowerCase()) ?? null,
    byIds: async (ids) => [...people.values()].filter((u) => ids.includes(u.id)),
  };
  let count = 0;
  /** A user of this role, known to the directory, as the gateway would name it as the caller. */
  const person = (role: UserRole = "Base"): Caller => {
    count += 1;
    const caller = {
      userId: 100 + count,
      username: `person${count}`,
      address: `0x${(100 + count).toString(16).padStart(40, "0")}`,
      role,
    };
    people.set(caller.userId, {
      id: caller.userId,
      name: "Test",
      surname: `Person${count}`,
      username: caller.username,
      address: caller.address,
      mailAddress: `person${count}@example.org`,
      role,
      invitations: null,
    });
    return caller;
  };
  return {
    projects,
    content,
    person,
    service: createProjectService({
      projects,
      reviewQueueMax: limits.reviewQueueMax ?? 100,
      reviewSharePerProposer: limits.reviewSharePerProposer ?? 5,
      hotReads: createHotReads({ version: () => projects.listVersion() }),
    }),
    memberships: createMembershipService({ projects, users }),
    fences: createUserFenceService({ projects, users, graceMs: 60_000 }),
    /** Chain facts only: "sync now" has no index here. */
    chain: createChainSync({
      projects,
      index: {
        evaluation: () => Promise.reject(new Error("no chain index in memory")),
        auction: () => Promise.reject(new Error("no chain index in memory")),
      },
      consumer: "projects",
    }),
  };
}
