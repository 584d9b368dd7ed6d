import type { TraceContext } from "@fundraise/bus";
import { claimMessage, enqueueMany } from "@fundraise/outbox";
import type { EventDescriptor, PayloadOf } from "@fundraise/protocol";
import type { Tx } from "@fundraise/service-kit";
import { LockMode, sql } from "@mikro-orm/core";
import type { FactKind, StandingFact } from "./chain-facts.ts";
import { Permission, Project } from "./project.entity.ts";
import { AWAITING_REVIEW, AWAITING_REVIEW_SQL } from "./review-queue.ts";

/** The database schema this service owns; the outbox and processed_message tables live in it too. */
export const PROJECTS_SCHEMA = "projects";

export type NewProjectRow = Pick<
  Project,
  "name" | "description" | "markdown" | "fileHash" | "cid" | "imagePath" | "proposerAddress"
>;

/** One log in one block: a chain fact's identity in the ledger. */
export interface FactKey {
  chainId: number;
  txHash: string;
  logIndex: number;
  blockHash: string;
}

/** What an Add decides on, read in one statement under its locks (`lockForAdd`). */
export interface AddFacts {
  /** A deletion fenced the proposer. */
  fenced: boolean;
  /** A project has this name (in any case). */
  nameTaken: boolean;
  /** Projects waiting for a viewer, and those of this proposer. */
  awaiting: number;
  awaitingBy: number;
  /** A project holds this content. */
  fileTaken: boolean;
  /** The content's releases (as `releaseOf` answers). */
  release: { version: number; waitMs: number } | null;
  /** The transaction's start, in ms since the epoch (the database's clock). */
  nowMs: number;
}

/** One transaction: changes to the rows it returns are written by `save`, and commit with its events. */
export interface ProjectTx {
  /**
   * An Add's locks in one statement, in the order every write takes them: the review queue, the
   * proposer's fence (shared), the content.
   */
  lockForAdd(userId: number, fileHash: string): Promise<void>;
  /** Every fact an Add decides on, in one statement (after `lockForAdd`: it sees what committed before). */
  addFacts(
    query: { userId: number; name: string; proposerAddress: string; fileHash: string },
    limits: { memoryMs: number; windowMs: number },
  ): Promise<AddFacts>;
  /** Inserts the project and its accepted Owner in one statement; answers the project's row. */
  insertProject(row: NewProjectRow, ownerId: number): Promise<Project>;
  /** Serializes every change to the review queue (Add) for the rest of the transaction. */
  lockReviewQueue(): Promise<void>;
  countAwaitingReview(): Promise<number>;
  /** Projects of this proposer waiting for a viewer. */
  countAwaitingReviewBy(proposerAddress: string): Promise<number>;
  /**
   * Serializes what concerns one content hash (a project taking it, a chain fact about it) for the rest of
   * the transaction: a fact recorded before a project takes the hash is seen by it, or finds the project.
   */
  lockHash(fileHash: string): Promise<void>;
  /**
   * Which of these users a deletion fenced, read under a shared lock per user (in id order) held to the
   * end of the transaction: a fence placed afterwards waits for this transaction and sees what it wrote.
   */
  fencedAmong(userIds: number[]): Promise<number[]>;
  /**
   * Takes the user's lock exclusively: every write for the user that began has committed or rolled back.
   * With `timeoutMs`, waits at most that long (then fails: 503, to repeat).
   */
  lockUser(userId: number, timeoutMs?: number): Promise<void>;
  /** Whether the user is an accepted Owner of a project. */
  ownsProject(userId: number): Promise<boolean>;
  /** Fences the user (idempotent); with `deleted`, records that the deletion is confirmed. */
  fence(userId: number, deleted: boolean): Promise<void>;
  /** Lifts the fence of a deletion that did not happen (a confirmed one stays); true when one was lifted. */
  unfence(userId: number): Promise<boolean>;
  lockById(id: number): Promise<Project | null>;
  lockByFileHash(fileHash: string): Promise<Project | null>;
  nameTaken(name: string, exceptId?: number): Promise<boolean>;
  /** The project with this name, in any case. */
  findByName(name: string): Promise<Project | null>;
  fileHashTaken(fileHash: string, exceptId?: number): Promise<boolean>;
  lockPermission(projectId: number, userId: number): Promise<Permission | null>;
  /** Users with a permission row on the project (accepted or invited), by id. */
  memberIds(projectId: number): Promise<number[]>;
  createProject(row: NewProjectRow): Project;
  createPermission(row: Pick<Permission, "projectId" | "userId" | "role" | "isAccepted">): Permission;
  remove(entity: Project | Permission): void;
  /** Sets `userId`'s rating of the project (a second one replaces the first). */
  upsertRating(projectId: number, userId: number, value: number): Promise<void>;
  /** Mean of the project's ratings; 0 without any. */
  meanRating(projectId: number): Promise<number>;
  /** Deletes every permission and rating of a user; answers the projects whose ratings changed. */
  removeUserRows(userId: number): Promise<{ ratedProjectIds: number[]; ownerOf: number[] }>;
  /** Writes pending changes (ids of created rows are known after it). */
  save(): Promise<void>;
  /**
   * Queues an event in the outbox, in this transaction: published after commit, never on rollback. Written
   * with the transaction's other events in one statement before it commits (`flush`).
   */
  emit<D extends EventDescriptor>(event: D, payload: PayloadOf<D>, ctx: TraceContext): Promise<void>;
  /** Writes the queued events (the repository's `transaction` calls it once the work is done). */
  flush(): Promise<void>;
  /**
   * Records a chain fact in the ledger; `retracted` when a retraction of it arrived first (a tombstone),
   * in which case it must not be applied.
   */
  recordFact(
    key: FactKey,
    fact: { kind: FactKind; projectHash: string; value: string | null; blockNumber: number },
  ): Promise<{ retracted: boolean }>;
  /**
   * Marks a fact retracted (a tombstone when it was not recorded yet); answers the project hash it was
   * about, or null when it never was applied here.
   */
  retractFact(key: FactKey, kind: FactKind, blockNumber: number): Promise<{ projectHash: string | null }>;
  /** The facts about a project hash that still stand. */
  standingFacts(projectHash: string): Promise<StandingFact[]>;
  /** Claims a message for a consumer once: false when it was handled before. */
  claimOnce(consumer: string, messageKey: string): Promise<boolean>;
  /**
   * The newest release of this content within `memoryMs`, and how long an unpin of it (or of an older
   * one) may still land: the longest rest of `windowMs` among those not confirmed; null: none remembered.
   * Under the content's lock (`lockHash`).
   */
  releaseOf(
    fileHash: string,
    limits: { memoryMs: number; windowMs: number },
  ): Promise<{ version: number; waitMs: number } | null>;
  /** The transaction's start, in ms since the epoch (the database's clock). */
  nowMs(): Promise<number>;
  /** Records a release of the content (under its lock, held by no project); answers its version. */
  release(fileHash: string, reason: string, memoryMs: number): Promise<number>;
  /** These releases' unpins are done. */
  confirmReleases(releases: { fileHash: string; version: number }[]): Promise<void>;
}

/** A project name as it is unique: case-insensitively. */
export const sameName = (name: string) => ({ [sql.lower("name")]: name.toLowerCase() });
/** The first key of the per-user advisory locks (the two-key form: a space of its own). */
const USER_LOCK = "hashtext('projects:user')";

/** The repository's unit of work on one transaction (service-kit's `Tx`): its locks, writes and ledger. */
export function createProjectTx({ em: t, sql: executor }: Tx): ProjectTx {
  /** Events of this transaction, written to the outbox in one statement before it commits (`flush`). */
  const pending: { descriptor: EventDescriptor; payload: PayloadOf<EventDescriptor>; ctx: TraceContext }[] =
    [];
  return {
    async lockForAdd(userId, fileHash) {
      // A select list is evaluated in order: the locks are taken one after the other, as listed.
      await executor.query(
        `select pg_advisory_xact_lock(hashtext('projects:review-queue')),
           pg_advisory_xact_lock_shared(${USER_LOCK}, $1),
           pg_advisory_xact_lock(hashtext('projects:hash:' || $2))`,
        [userId, fileHash],
      );
    },
    async addFacts({ userId, name, proposerAddress, fileHash }, { memoryMs, windowMs }) {
      const S = PROJECTS_SCHEMA;
      const waiting = `from ${S}.project where ${AWAITING_REVIEW_SQL}`;
      const { rows } = await executor.query(
        `select
           exists (select 1 from ${S}.user_fence where user_id = $1) as fenced,
           exists (select 1 from ${S}.project where lower(name) = lower($2)) as name_taken,
           (select count(*) ${waiting})::int as awaiting,
           (select count(*) ${waiting} and proposer_address = $3)::int as awaiting_by,
           exists (select 1 from ${S}.project where file_hash = $4) as file_taken,
           (extract(epoch from now()) * 1000)::float8 as now_ms,
           r.version, r.wait_ms
         from (select max(version) as version,
                 coalesce(ceil(extract(epoch from max(released_at) filter (where confirmed_at is null)
                   + $5::float8 * interval '1 millisecond' - now()) * 1000), 0) as wait_ms
               from ${S}.content_release
               where file_hash = $6 and released_at > now() - $7::float8 * interval '1 millisecond') r`,
        [userId, name, proposerAddress, fileHash, windowMs, fileHash, memoryMs],
      );
      const row = rows[0] ?? {};
      return {
        fenced: Boolean(row.fenced),
        nameTaken: Boolean(row.name_taken),
        awaiting: Number(row.awaiting),
        awaitingBy: Number(row.awaiting_by),
        fileTaken: Boolean(row.file_taken),
        nowMs: Number(row.now_ms),
        release:
          row.version === null || row.version === undefined
            ? null
            : { version: Number(row.version), waitMs: Math.max(0, Number(row.wait_ms)) },
      };
    },
    async insertProject(row, ownerId) {
      const { rows } = await executor.query(
        `with made as (
           insert into ${PROJECTS_SCHEMA}.project
             (name, description, markdown, file_hash, cid, image_path, proposer_address, created_at, updated_at)
           values ($1, $2, $3, $4, $5, $6, $7, now(), now()) returning *),
         owner as (
           insert into ${PROJECTS_SCHEMA}.permission (project_id, user_id, role, is_accepted, created_at)
           select id, $8, 'Owner', true, now() from made)
         select * from made`,
        [
          row.name,
          row.description,
          row.markdown,
          row.fileHash,
          row.cid,
          row.imagePath,
          row.proposerAddress,
          ownerId,
        ],
      );
      return projectOfRow(rows[0] ?? {});
    },
    async lockReviewQueue() {
      await executor.query("select pg_advisory_xact_lock(hashtext('projects:review-queue'))");
    },
    countAwaitingReview: () => t.count(Project, AWAITING_REVIEW),
    countAwaitingReviewBy: (proposerAddress) => t.count(Project, { ...AWAITING_REVIEW, proposerAddress }),
    async lockHash(fileHash) {
      await executor.query("select pg_advisory_xact_lock(hashtext('projects:hash:' || $1))", [fileHash]);
    },
    async fencedAmong(userIds) {
      const ids = [...new Set(userIds)].sort((a, b) => a - b);
      for (const id of ids) {
        await executor.query(`select pg_advisory_xact_lock_shared(${USER_LOCK}, $1)`, [id]);
      }
      if (ids.length === 0) return [];
      const { rows } = await executor.query(
        `select user_id from ${PROJECTS_SCHEMA}.user_fence where user_id in (${ids.map((_, i) => `$${i + 1}`)})`,
        ids,
      );
      return rows.map((r) => Number(r.user_id));
    },
    async lockUser(userId, timeoutMs) {
      if (timeoutMs !== undefined) {
        // SET takes no parameters; the value is an integer we made.
        await executor.query(`set local lock_timeout = ${Math.max(1, Math.ceil(timeoutMs))}`);
      }
      await executor.query(`select pg_advisory_xact_lock(${USER_LOCK}, $1)`, [userId]);
    },
    async ownsProject(userId) {
      const { rows } = await executor.query(
        `select 1 from ${PROJECTS_SCHEMA}.permission
         where user_id = $1 and role = 'Owner' and is_accepted limit 1`,
        [userId],
      );
      return rows.length > 0;
    },
    async fence(userId, deleted) {
      await executor.query(
        `insert into ${PROJECTS_SCHEMA}.user_fence as f (user_id, deleted_at)
         values ($1, case when $2 then now() end)
         on conflict (user_id) do update set deleted_at = coalesce(f.deleted_at, excluded.deleted_at)`,
        [userId, deleted],
      );
    },
    async unfence(userId) {
      const { rows } = await executor.query(
        `delete from ${PROJECTS_SCHEMA}.user_fence where user_id = $1 and deleted_at is null returning user_id`,
        [userId],
      );
      return rows.length > 0;
    },
    lockById: (id) => t.findOne(Project, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE }),
    lockByFileHash: (fileHash) => t.findOne(Project, { fileHash }, { lockMode: LockMode.PESSIMISTIC_WRITE }),
    nameTaken: async (name, exceptId) =>
      (await t.count(Project, { ...sameName(name), ...(exceptId ? { id: { $ne: exceptId } } : {}) })) > 0,
    findByName: (name) => t.findOne(Project, sameName(name)),
    fileHashTaken: async (fileHash, exceptId) =>
      (await t.count(Project, { fileHash, ...(exceptId ? { id: { $ne: exceptId } } : {}) })) > 0,
    lockPermission: (projectId, userId) =>
      t.findOne(Permission, { projectId, userId }, { lockMode: LockMode.PESSIMISTIC_WRITE }),
    async memberIds(projectId) {
      const { rows } = await executor.query(
        `select user_id from ${PROJECTS_SCHEMA}.permission where project_id = $1 order by user_id`,
        [projectId],
      );
      return rows.map((r) => Number(r.user_id));
    },
    createProject: (row) => t.create(Project, row),
    createPermission: (row) => t.create(Permission, row),
    remove: (entity) => void t.remove(entity),
    async upsertRating(projectId, userId, value) {
      await executor.query(
        `insert into ${PROJECTS_SCHEMA}.rating (project_id, user_id, value, created_at, updated_at)
         values ($1, $2, $3, now(), now())
         on conflict (project_id, user_id) do update set value = excluded.value, updated_at = now()`,
        [projectId, userId, value],
      );
    },
    async meanRating(projectId) {
      const { rows } = await executor.query(
        `select coalesce(avg(value), 0)::float8 as mean from ${PROJECTS_SCHEMA}.rating where project_id = $1`,
        [projectId],
      );
      return Number(rows[0]?.mean ?? 0);
    },
    async removeUserRows(userId) {
      const rated = await executor.query(
        `delete from ${PROJECTS_SCHEMA}.rating where user_id = $1 returning project_id`,
        [userId],
      );
      const owned = await executor.query(
        `delete from ${PROJECTS_SCHEMA}.permission where user_id = $1 returning project_id, role`,
        [userId],
      );
      return {
        ratedProjectIds: [...new Set(rated.rows.map((r) => Number(r.project_id)))].sort((a, b) => a - b),
        ownerOf: owned.rows.filter((r) => r.role === "Owner").map((r) => Number(r.project_id)),
      };
    },
    save: () => t.flush(),
    async emit(event, payload, ctx) {
      pending.push({ descriptor: event, payload, ctx });
    },
    async flush() {
      // One statement per request context (a transaction has one, but for the chain's batches).
      while (pending.length > 0) {
        const ctx = pending[0]?.ctx;
        const batch = pending.filter((e) => e.ctx === ctx);
        pending.splice(0, pending.length, ...pending.filter((e) => e.ctx !== ctx));
        await enqueueMany(executor, batch, { schema: PROJECTS_SCHEMA, ...(ctx ? { context: ctx } : {}) });
      }
    },
    async releaseOf(fileHash, { memoryMs, windowMs }) {
      // now() is the transaction's start, before this lock was had: the wait it gives is never too short.
      const { rows } = await executor.query(
        `select max(version) as version,
           coalesce(ceil(extract(epoch from
             max(released_at) filter (where confirmed_at is null) + $1::float8 * interval '1 millisecond' - now()
           ) * 1000), 0) as wait_ms
         from ${PROJECTS_SCHEMA}.content_release
         where file_hash = $2 and released_at > now() - $3::float8 * interval '1 millisecond'`,
        [windowMs, fileHash, memoryMs],
      );
      const row = rows[0];
      if (!row || row.version === null) return null;
      return { version: Number(row.version), waitMs: Math.max(0, Number(row.wait_ms)) };
    },
    async nowMs() {
      const { rows } = await executor.query("select (extract(epoch from now()) * 1000)::float8 as ms");
      return Number(rows[0]?.ms);
    },
    async release(fileHash, reason, memoryMs) {
      // Releases older than the memory are forgotten a few at a time, as new ones come.
      const { rows } = await executor.query(
        `with forgotten as (
           delete from ${PROJECTS_SCHEMA}.content_release where version in (
             select version from ${PROJECTS_SCHEMA}.content_release
             where released_at < now() - $1::float8 * interval '1 millisecond' limit 100
             for update skip locked))
         insert into ${PROJECTS_SCHEMA}.content_release (file_hash, reason) values ($2, $3) returning version`,
        [memoryMs, fileHash, reason.slice(0, 200)],
      );
      return Number(rows[0]?.version);
    },
    async confirmReleases(releases) {
      if (releases.length === 0) return;
      const pairs = releases.map((_, i) => `($${2 * i + 1}, $${2 * i + 2}::bigint)`).join(", ");
      await executor.query(
        `update ${PROJECTS_SCHEMA}.content_release set confirmed_at = now()
         where confirmed_at is null and (file_hash, version) in (${pairs})`,
        releases.flatMap((r) => [r.fileHash, r.version]),
      );
    },
    claimOnce: (consumer, messageKey) => claimMessage(executor, { consumer, messageKey }, PROJECTS_SCHEMA),
    async recordFact(key, fact) {
      // On a tombstone the row gets what it is about, and stays retracted.
      const { rows } = await executor.query(
        `insert into ${PROJECTS_SCHEMA}.chain_fact
           (chain_id, tx_hash, log_index, block_hash, block_number, kind, project_hash, value)
         values ($1, $2, $3, $4, $5, $6, $7, $8)
         on conflict (chain_id, tx_hash, log_index, block_hash)
           do update set project_hash = excluded.project_hash, value = excluded.value
         returning retracted`,
        [
          key.chainId,
          key.txHash.toLowerCase(),
          key.logIndex,
          key.blockHash.toLowerCase(),
          fact.blockNumber,
          fact.kind,
          fact.projectHash,
          fact.value,
        ],
      );
      return { retracted: Boolean(rows[0]?.retracted) };
    },
    async retractFact(key, kind, blockNumber) {
      const { rows } = await executor.query(
        `insert into ${PROJECTS_SCHEMA}.chain_fact
           (chain_id, tx_hash, log_index, block_hash, block_number, kind, retracted)
         values ($1, $2, $3, $4, $5, $6, true)
         on conflict (chain_id, tx_hash, log_index, block_hash) do update set retracted = true
         returning project_hash`,
        [key.chainId, key.txHash.toLowerCase(), key.logIndex, key.blockHash.toLowerCase(), blockNumber, kind],
      );
      return { projectHash: (rows[0]?.project_hash as string | null | undefined) ?? null };
    },
    async standingFacts(projectHash) {
      const { rows } = await executor.query(
        `select kind, value, block_number, log_index from ${PROJECTS_SCHEMA}.chain_fact
         where project_hash = $1 and not retracted`,
        [projectHash],
      );
      return rows.map((r) => ({
        kind: r.kind as FactKind,
        value: (r.value as string | null) ?? null,
        block: Number(r.block_number),
        logIndex: Number(r.log_index),
      }));
    },
  };
}

/** A project row as `returning *` gives it, as the entity reads it (the mapper's input). */
function projectOfRow(r: Record<string, unknown>): Project {
  const num = (v: unknown) => (v === null ? null : Number(v));
  return {
    id: Number(r.id),
    name: r.name,
    description: r.description,
    markdown: r.markdown,
    fileHash: r.file_hash,
    cid: r.cid,
    imagePath: r.image_path,
    status: r.status,
    viewerAccepted: r.viewer_accepted,
    viewerAcceptedAddress: r.viewer_accepted_address,
    rating: Number(r.rating),
    proposerAddress: r.proposer_address,
    isAuctionCreated: r.is_auction_created,
    isAuctionStarted: r.is_auction_started,
    auctionStatus: r.auction_status,
    evaluationBlock: num(r.evaluation_block),
    evaluationLogIndex: num(r.evaluation_log_index),
    auctionBlock: num(r.auction_block),
    auctionLogIndex: num(r.auction_log_index),
    createdAt: new Date(r.created_at as string | Date),
    updatedAt: new Date(r.updated_at as string | Date),
  } as Project;
}
