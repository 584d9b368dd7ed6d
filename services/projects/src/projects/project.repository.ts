import type { MessageContext } from "@fundraise/bus";
import type { PermissionRole, ProjectStatus, Scope } from "@fundraise/protocol";
import { executorOf, handleOnce, inTransaction } from "@fundraise/service-kit";
import type { EntityManager } from "@mikro-orm/postgresql";
import { Permission, Project } from "./project.entity.ts";
import { conflictOfConstraint } from "./project.errors.ts";
import { createProjectTx, PROJECTS_SCHEMA, type ProjectTx, sameName } from "./project.tx.ts";

export type { FactKey, NewProjectRow, ProjectTx } from "./project.tx.ts";
export { PROJECTS_SCHEMA };

export interface ListOptions {
  status?: ProjectStatus;
  /** `id`: oldest first; `top`: rating descending, newest first among equals. */
  order: "id" | "top";
  limit?: number;
}

/**
 * The projects service's data access: every query and lock, no rules. Reads outside a transaction see
 * committed rows; `transaction` gives the use cases a unit of work whose rows stay locked until it ends
 * and whose events are written to the outbox in the same transaction.
 */
export interface ProjectRepository {
  transaction<T>(work: (tx: ProjectTx) => Promise<T>): Promise<T>;
  /**
   * Runs `work` once per `key` for `consumer` (service-kit's handleOnce), in one transaction with the
   * claim: false when the key was handled before.
   */
  once(
    consumer: string,
    key: string,
    ctx: Pick<MessageContext, "messageId" | "log">,
    work: (tx: ProjectTx) => Promise<void>,
  ): Promise<boolean>;
  findById(id: number): Promise<Project | null>;
  /** The ones of these projects that exist, by id. */
  findByIds(ids: number[]): Promise<Project[]>;
  /** Users with a permission row (accepted or invited) on each of these projects, by user id. */
  memberIdsOf(projectIds: number[]): Promise<Map<number, number[]>>;
  /** The project table's version: moves in the transaction of every change to a project. */
  listVersion(): Promise<number>;
  findByFileHash(fileHash: string): Promise<Project | null>;
  nameTaken(name: string, exceptId?: number): Promise<boolean>;
  /** The project with this name, in any case. */
  findByName(name: string): Promise<Project | null>;
  /** Projects in `scope` (visibility.ts: its open projects and the member's), filtered and ordered as asked. */
  list(scope: Scope, options: ListOptions): Promise<Project[]>;
  /** Projects on which `userId` has a permission, accepted or pending, in permission order. */
  projectsOfUser(userId: number, accepted: boolean): Promise<Project[]>;
  /** Not yet viewer-accepted, oldest first. */
  awaitingReview(): Promise<Project[]>;
  hashes(onlyAuctionsStarted: boolean): Promise<string[]>;
  /** The ones among `fileHashes` that some project holds. */
  heldFileHashes(fileHashes: string[]): Promise<string[]>;
  permissionOf(projectId: number, userId: number): Promise<Permission | null>;
  /** Accepted permissions with one of `roles`, Owner first, then by id. */
  membersWithRole(projectId: number, roles: PermissionRole[]): Promise<Permission[]>;
  /** A user's pending invitations, oldest first. */
  pendingOfUser(userId: number): Promise<Permission[]>;
  /** Whether a deletion fenced the user (no lock: the writes check again in their transaction). */
  isFenced(userId: number): Promise<boolean>;
  /** Users fenced before `cutoff` whose deletion was not confirmed (its event), oldest first. */
  pendingFences(cutoff: Date, limit: number): Promise<number[]>;
}

const TOP_ORDER = { rating: "desc", createdAt: "desc", id: "desc" } as const;

export function createProjectRepository(em: () => EntityManager): ProjectRepository {
  async function list(scope: Scope, options: ListOptions): Promise<Project[]> {
    const e = em();
    let visible: object = {};
    if (!scope.all) {
      const { open } = scope;
      const memberOf =
        scope.memberId === null
          ? []
          : (await e.find(Permission, { userId: scope.memberId }, { fields: ["projectId"] })).map(
              (p) => p.projectId,
            );
      visible = memberOf.length === 0 ? open : { $or: [open, { id: { $in: memberOf } }] };
    }
    const where = options.status ? { $and: [visible, { status: options.status }] } : visible;
    return e.find(Project, where, {
      orderBy: options.order === "top" ? TOP_ORDER : { id: "asc" },
      ...(options.limit === undefined ? {} : { limit: options.limit }),
    });
  }

  /** The work, then its queued events (one outbox statement), in the same transaction. */
  async function withEvents<T>(t: ProjectTx, work: (tx: ProjectTx) => Promise<T>): Promise<T> {
    const value = await work(t);
    await t.flush();
    return value;
  }

  return {
    transaction: (work) =>
      inTransaction(em(), (tx) => withEvents(createProjectTx(tx), work), conflictOfConstraint),
    once: (consumer, key, ctx, work) =>
      handleOnce(em(), { schema: PROJECTS_SCHEMA, consumer, key }, ctx, (t) =>
        withEvents(createProjectTx({ em: t, sql: executorOf(t) }), work),
      ),
    findById: (id) => em().findOne(Project, { id }),
    findByIds: async (ids) =>
      ids.length === 0 ? [] : em().find(Project, { id: { $in: ids } }, { orderBy: { id: "asc" } }),
    async memberIdsOf(projectIds) {
      const members = new Map<number, number[]>();
      if (projectIds.length === 0) return members;
      const rows = await em().find(
        Permission,
        { projectId: { $in: projectIds } },
        { fields: ["projectId", "userId"], orderBy: { userId: "asc" } },
      );
      for (const r of rows) members.set(r.projectId, [...(members.get(r.projectId) ?? []), r.userId]);
      return members;
    },
    async listVersion() {
      const { rows } = await executorOf(em()).query(`select version from ${PROJECTS_SCHEMA}.list_version`);
      return Number(rows[0]?.version ?? 0);
    },
    findByFileHash: (fileHash) => em().findOne(Project, { fileHash }),
    findByName: (name) => em().findOne(Project, sameName(name)),
    nameTaken: async (name, exceptId) =>
      (await em().count(Project, { ...sameName(name), ...(exceptId ? { id: { $ne: exceptId } } : {}) })) > 0,
    list,
    async projectsOfUser(userId, accepted) {
      const e = em();
      const permissions = await e.find(
        Permission,
        { userId, isAccepted: accepted },
        { orderBy: { id: "asc" } },
      );
      if (permissions.length === 0) return [];
      const projects = await e.find(Project, { id: { $in: permissions.map((p) => p.projectId) } });
      const byId = new Map(projects.map((p) => [p.id, p]));
      return permissions.flatMap((p) => byId.get(p.projectId) ?? []);
    },
    awaitingReview: () => em().find(Project, { viewerAccepted: false }, { orderBy: { id: "asc" } }),
    hashes: async (onlyAuctionsStarted) =>
      (
        await em().find(Project, onlyAuctionsStarted ? { isAuctionStarted: true } : {}, {
          fields: ["fileHash"],
          orderBy: { id: "asc" },
        })
      ).map((p) => p.fileHash),
    heldFileHashes: async (fileHashes) =>
      fileHashes.length === 0
        ? []
        : (await em().find(Project, { fileHash: { $in: fileHashes } }, { fields: ["fileHash"] })).map(
            (p) => p.fileHash,
          ),
    permissionOf: (projectId, userId) => em().findOne(Permission, { projectId, userId }),
    async membersWithRole(projectId, roles) {
      const rows = await em().find(
        Permission,
        { projectId, isAccepted: true, role: { $in: roles } },
        { orderBy: { id: "asc" } },
      );
      return rows.sort((a, b) => Number(b.role === "Owner") - Number(a.role === "Owner"));
    },
    pendingOfUser: (userId) =>
      em().find(Permission, { userId, isAccepted: false }, { orderBy: { id: "asc" } }),
    async isFenced(userId) {
      const { rows } = await executorOf(em()).query(
        `select 1 from ${PROJECTS_SCHEMA}.user_fence where user_id = $1`,
        [userId],
      );
      return rows.length > 0;
    },
    async pendingFences(cutoff, limit) {
      const { rows } = await executorOf(em()).query(
        `select user_id from ${PROJECTS_SCHEMA}.user_fence
         where deleted_at is null and fenced_at < $1 order by fenced_at limit $2`,
        [cutoff, limit],
      );
      return rows.map((r) => Number(r.user_id));
    },
  };
}
