import type { TraceContext } from "@fundraise/bus";
import { claimMessage, enqueue, type SqlPool } from "@fundraise/outbox";
import type { EventDescriptor, PayloadOf, UserRole } from "@fundraise/protocol";
import { inTransaction, type Tx } from "@fundraise/service-kit";
import { LockMode, sql } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import { RoleChange } from "./role-change.entity.ts";
import { User } from "./user.entity.ts";
import { conflictOfConstraint } from "./user.errors.ts";

/** The database schema this service owns; the outbox and processed_message tables live in it too. */
export const USERS_SCHEMA = "users";

export type UniqueField = "address" | "mailAddress" | "username";

/** An admin's Blacklist of an address: when, at which chain head, by whom. */
export interface Sanction {
  at: Date;
  block: number | null;
  changedBy: string;
}
const COLUMN: Record<UniqueField, string> = {
  address: "address",
  mailAddress: "mail_address",
  username: "username",
};

/** `lower(column) = lower(value)`: matches the case-insensitive unique indexes and uses them. */
const sameCi = (field: UniqueField, value: string) => ({ [sql.lower(COLUMN[field])]: value.toLowerCase() });

/** The fields of a user that sign-in needs (`toUserAccount`). */
export type AccountRow = Pick<
  User,
  | "id"
  | "address"
  | "username"
  | "name"
  | "surname"
  | "mailAddress"
  | "role"
  | "chainRole"
  | "isVerified"
  | "accountVersion"
>;

export type NewUserRow = Pick<
  User,
  "name" | "surname" | "username" | "address" | "role" | "isVerified" | "pendingUntil" | "proof"
> & { mailAddress: string };

/**
 * The users service's data access: every query and lock, no rules. Reads outside a transaction see
 * committed rows; `transaction` gives the use cases a unit of work whose rows stay locked until it ends
 * and whose events are written to the outbox in the same transaction.
 */
export interface UserRepository {
  /** `context`: the request the write serves; the trigger's outbox rows carry it (the journal's story). */
  transaction<T>(work: (tx: UserTx) => Promise<T>, context?: TraceContext): Promise<T>;
  countVerified(): Promise<number>;
  findById(id: number): Promise<User | null>;
  /** The sign-in fields of the user with this address (any case): one indexed read, no entity. */
  findAccountByAddress(address: string): Promise<AccountRow | null>;
  /** The user with this username (any case), unless it is a sign-up that never verified. */
  findByUsername(username: string): Promise<User | null>;
  findByIds(ids: number[]): Promise<User[]>;
  listAll(): Promise<User[]>;
}

/** One transaction: changes to the users it returns are written by `save`, and commit with its events. */
export interface UserTx {
  lockById(id: number): Promise<User | null>;
  lockByAddress(address: string): Promise<User | null>;
  /** Users whose last applied chain fact is at this chain position, locked in id order. */
  lockByChainPosition(block: number, logIndex: number): Promise<User[]>;
  /** Users other than `exceptId` holding any of `wanted` (case-insensitively), locked in id order. */
  lockHolders(wanted: Partial<Record<UniqueField, string>>, exceptId?: number): Promise<User[]>;
  /**
   * Takes the authority lock (one admin change or deletion at a time), then locks every Admin row in id
   * order and answers their ids: two admins deleting or demoting each other at once are serialized here
   * (the second then finds itself no Admin, or one Admin left). Taken first by every admin's write and
   * every deletion, before the target's row; the Admin set each sees is the one the last committed.
   */
  lockAdmins(): Promise<number[]>;
  /**
   * Serializes the sign-ups of one address (any case) for the rest of the transaction: a second one sees
   * what the first committed, even the row that did not exist when it started looking.
   */
  lockSignUp(address: string): Promise<void>;
  create(row: NewUserRow): User;
  remove(user: User): void;
  recordRoleChange(change: {
    userId: number;
    previousRole: UserRole;
    newRole: UserRole;
    changedBy: string;
    sourceTx: string | null;
  }): void;
  /**
   * The address's admin Blacklist, kept beyond its account (`address_sanction`): set when an admin's change
   * makes the role Blacklist, cleared by any other change; read by a sign-up of the address.
   */
  setSanction(address: string, sanction: Sanction | null): Promise<void>;
  sanctionOf(address: string): Promise<Sanction | null>;
  /** Writes pending changes (ids of created users are known after it). */
  save(): Promise<void>;
  /** Queues an event in the outbox, in this transaction: published after commit, never on rollback. */
  emit<D extends EventDescriptor>(event: D, payload: PayloadOf<D>, ctx: TraceContext): Promise<void>;
  /** Claims a message for a consumer once: false when it was handled before (see handleOnce). */
  claimOnce(consumer: string, messageKey: string): Promise<boolean>;
  /**
   * Undoes a step taken in another service for this transaction when it does not commit (a rollback, or a
   * failed commit): run after the transaction ended, in order; a failure is logged by the caller's undo.
   */
  onRollback(undo: () => Promise<void>): void;
}

/** `em` for units of work and entities; `pool` for the hot single-statement reads (sign-in, the count). */
export function createUserRepository(em: () => EntityManager, pool: SqlPool): UserRepository {
  const txOf = ({ em: t, sql: executor }: Tx, undo: (() => Promise<void>)[]): UserTx => {
    const lockOne = (where: object) => t.findOne(User, where, { lockMode: LockMode.PESSIMISTIC_WRITE });
    return {
      lockById: (id) => lockOne({ id }),
      lockByAddress: (address) => lockOne(sameCi("address", address)),
      lockByChainPosition: (block, logIndex) =>
        t.find(
          User,
          { chainRoleBlock: block, chainRoleLogIndex: logIndex },
          { lockMode: LockMode.PESSIMISTIC_WRITE, orderBy: { id: "asc" } },
        ),
      async lockHolders(wanted, exceptId) {
        const fields = (Object.keys(wanted) as UniqueField[]).filter((f) => wanted[f] !== undefined);
        if (fields.length === 0) return [];
        return t.find(
          User,
          {
            $or: fields.map((f) => sameCi(f, wanted[f] as string)),
            ...(exceptId === undefined ? {} : { id: { $ne: exceptId } }),
          },
          { lockMode: LockMode.PESSIMISTIC_WRITE, orderBy: { id: "asc" } },
        );
      },
      async lockAdmins() {
        // One authority change at a time, then the Admin rows. Without the first lock, two changes whose
        // statements saw the Admin set before and after a third made someone Admin locked that user's
        // row in different orders (one among the admins, one as the target): a deadlock, and under a
        // burst a queue of them, each a second long.
        await executor.query("select pg_advisory_xact_lock(hashtext('users:authority'))");
        const { rows } = await executor.query(
          `SELECT id FROM ${USERS_SCHEMA}."user" WHERE role = 'Admin' ORDER BY id FOR UPDATE`,
        );
        return rows.map((r) => Number(r.id));
      },
      async lockSignUp(address) {
        await executor.query("select pg_advisory_xact_lock(hashtext('users:sign-up:' || lower($1)))", [
          address,
        ]);
      },
      create: (row) => t.create(User, row),
      remove: (user) => t.remove(user),
      recordRoleChange: (change) => void t.create(RoleChange, change),
      async setSanction(address, sanction) {
        if (sanction === null) {
          await executor.query(`DELETE FROM ${USERS_SCHEMA}.address_sanction WHERE address = $1`, [
            address.toLowerCase(),
          ]);
          return;
        }
        await executor.query(
          `INSERT INTO ${USERS_SCHEMA}.address_sanction (address, admin_role_at, admin_role_block, changed_by)
           VALUES ($1, $2, $3, $4)
           ON CONFLICT (address) DO UPDATE SET admin_role_at = excluded.admin_role_at,
             admin_role_block = excluded.admin_role_block, changed_by = excluded.changed_by`,
          [address.toLowerCase(), sanction.at, sanction.block, sanction.changedBy],
        );
      },
      async sanctionOf(address) {
        const { rows } = await executor.query(
          `SELECT admin_role_at, admin_role_block, changed_by FROM ${USERS_SCHEMA}.address_sanction
           WHERE address = $1`,
          [address.toLowerCase()],
        );
        const row = rows[0];
        if (!row) return null;
        return {
          at: new Date(row.admin_role_at as string),
          block: row.admin_role_block == null ? null : Number(row.admin_role_block),
          changedBy: String(row.changed_by),
        };
      },
      save: () => t.flush(),
      async emit(event, payload, ctx) {
        await enqueue(executor, event, payload, { schema: USERS_SCHEMA, context: ctx });
      },
      claimOnce: (consumer, messageKey) => claimMessage(executor, { consumer, messageKey }, USERS_SCHEMA),
      onRollback: (step) => void undo.push(step),
    };
  };

  return {
    async transaction(work, context) {
      const undo: (() => Promise<void>)[] = [];
      try {
        return await inTransaction(em(), (tx) => work(txOf(tx, undo)), conflictOfConstraint, context);
      } catch (error) {
        for (const step of undo) await step();
        throw error;
      }
    },
    async countVerified() {
      const {
        rows: [row],
      } = await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${USERS_SCHEMA}."user" WHERE is_verified`,
      );
      return row?.n ?? 0;
    },
    findById: (id) => em().findOne(User, { id }),
    async findAccountByAddress(address) {
      const {
        rows: [row],
      } = await pool.query<AccountRow>(
        `SELECT id, address, username, name, surname, mail_address AS "mailAddress", role,
                chain_role AS "chainRole", is_verified AS "isVerified",
                account_version::int AS "accountVersion"
           FROM ${USERS_SCHEMA}."user" WHERE lower(address) = $1`,
        [address.toLowerCase()],
      );
      return row ?? null;
    },
    // A sign-up that never verified is not a user others can name yet (invitations).
    findByUsername: (username) =>
      em().findOne(User, {
        ...sameCi("username", username),
        $not: { isVerified: false, pendingUntil: { $ne: null } },
      }),
    findByIds: (ids) =>
      ids.length === 0
        ? Promise.resolve([])
        : em().find(User, { id: { $in: ids } }, { orderBy: { id: "asc" } }),
    listAll: () => em().find(User, {}, { orderBy: { id: "asc" } }),
  };
}
