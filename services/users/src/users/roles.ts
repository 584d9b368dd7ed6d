import {
  type Caller,
  ChainEvents,
  type PayloadOf,
  type SessionChange,
  type UserRole,
  UsersEvents,
  UsersRpc,
} from "@fundraise/protocol";
import { requireRole } from "./access.ts";
import type { InForce } from "./after-commit.ts";
import {
  adminChangeIsNewer,
  type ChainObservation,
  decideChainRole,
  type RoleSources,
} from "./role-precedence.ts";
import type { User } from "./user.entity.ts";
import { UserErrors } from "./user.errors.ts";
import { toUserAccount, toUserDto, type UserAccountOut, type UserDtoOut } from "./user.mapper.ts";
import type { ChainIndex, OpContext } from "./user.ports.ts";
import type { UserRepository, UserTx } from "./user.repository.ts";
import { parseAddress, parseRole } from "./user.validation.ts";

type UserStatusChanged = PayloadOf<typeof ChainEvents.userStatusChanged>;
type FactRetracted = PayloadOf<typeof ChainEvents.factRetracted>;

/** A user's role and its two sources (rules.md §7.1): an admin's updaterole and the chain. */
export interface Roles {
  /** Admin only; the caller's own role cannot be changed. */
  updateRole(caller: Caller, address: string, role: string, ctx: OpContext): Promise<UserDtoOut>;
  /** The role the chain gives `address`, read at sign-in; null when no user has it. */
  setChainRole(address: string, role: UserRole, ctx: OpContext): Promise<UserAccountOut | null>;
  /** A chain fact, applied once per (chainId, txHash, logIndex). */
  applyChainStatus(fact: UserStatusChanged, ctx: OpContext): Promise<void>;
  /** A reorg removed a status fact: its user's role goes back to what the index says now. */
  retractChainStatus(retraction: FactRetracted, ctx: OpContext): Promise<void>;
  /**
   * An admin's write decides from the current state (the Admin rows locked, the caller among them);
   * answers the Admins' ids. `caller` null: no admin acts (a user deleting itself), the rows are still locked.
   */
  lockAuthority(t: UserTx, caller: Caller | null): Promise<number[]>;
}

function roleSourcesOf(user: User): RoleSources {
  return {
    role: user.role as UserRole,
    chainRole: (user.chainRole ?? null) as UserRole | null,
    chainPosition:
      user.chainRoleBlock == null
        ? null
        : { block: Number(user.chainRoleBlock), logIndex: user.chainRoleLogIndex ?? 0 },
    adminRoleAt: user.adminRoleAt ?? null,
    adminRoleBlock: user.adminRoleBlock == null ? null : Number(user.adminRoleBlock),
  };
}

const USER_STATUS_FACT = ChainEvents.userStatusChanged.name;

/** A chain fact dated by its block (the arrival time when the indexer gave none). */
function chainFact(fact: UserStatusChanged, arrivedAt: Date): ChainObservation {
  const { blockNumber, logIndex, blockTimestamp } = fact.origin;
  return {
    kind: "fact",
    role: fact.role,
    position: { block: blockNumber, logIndex },
    at: blockTimestamp === undefined ? arrivedAt : new Date(blockTimestamp * 1000),
  };
}

export function createRoles(deps: {
  users: UserRepository;
  chain: ChainIndex;
  inForce: InForce;
  now: () => Date;
}): Roles {
  const { users, now, inForce } = deps;

  /**
   * The Admin rows locked in id order, so admins acting on each other are serialized, and the caller still
   * among them: the gateway's role is of when the request began, and another admin may have demoted or
   * deleted the caller since (two admins demoting each other at once left no Admin).
   */
  async function lockAuthority(t: UserTx, caller: Caller | null): Promise<number[]> {
    const admins = await t.lockAdmins();
    if (caller && !admins.includes(caller.userId)) throw UserErrors.adminOnly();
    return admins;
  }

  /** Sets the role and records it; no event and no history when it is already that role. */
  async function changeRole(
    t: UserTx,
    user: User,
    role: UserRole,
    change: { changedBy: string; sourceTx: string | null },
    ctx: OpContext,
  ): Promise<void> {
    if (user.role === role) return;
    const previousRole = user.role as UserRole;
    user.role = role;
    user.accountVersion = Number(user.accountVersion) + 1;
    t.recordRoleChange({ userId: user.id, previousRole, newRole: role, ...change });
    // An admin's Blacklist outlives the account (a new sign-up of the address starts Blacklisted).
    const byAdmin = change.changedBy !== "chain" && role === "Blacklist";
    await t.setSanction(
      user.address,
      byAdmin
        ? {
            at: user.adminRoleAt ?? now(),
            block: user.adminRoleBlock == null ? null : Number(user.adminRoleBlock),
            changedBy: change.changedBy,
          }
        : null,
    );
    await t.save();
    await t.emit(
      UsersEvents.roleChanged,
      {
        userId: user.id,
        address: user.address,
        role,
        previousRole,
        changedBy: change.changedBy,
        version: Number(user.accountVersion),
      },
      ctx,
    );
  }

  /**
   * Records what the chain says of an address and sets the role when the chain's change is the newer
   * source (role-precedence.ts). Null when no user has the address.
   */
  async function applyChainRole(
    t: UserTx,
    address: string,
    seen: ChainObservation,
    sourceTx: string | null,
    ctx: OpContext,
  ): Promise<UserAccountOut | null> {
    const user = await t.lockByAddress(address);
    if (!user) return null;
    const decision = decideChainRole(roleSourcesOf(user), seen);
    if (decision.record) {
      user.chainRole = seen.role;
      if (seen.kind === "fact") {
        user.chainRoleBlock = seen.position.block;
        user.chainRoleLogIndex = seen.position.logIndex;
      }
      await t.save();
    }
    if (decision.role) await changeRole(t, user, decision.role, { changedBy: "chain", sourceTx }, ctx);
    else if (decision.record && seen.role !== user.role) {
      ctx.log.info(
        { userId: user.id, role: user.role, chainRole: seen.role },
        "the chain's role is older than the admin's change: the admin's stands",
      );
    }
    return toUserAccount(user);
  }

  return {
    lockAuthority,

    async updateRole(caller, addressInput, roleInput, ctx) {
      requireRole(UsersRpc.updateRole, caller);
      const role = parseRole(roleInput);
      if (!role) throw UserErrors.invalidRole(roleInput);
      const address = parseAddress(addressInput);
      if (!address) throw UserErrors.invalidAddress();
      // Read before the change: a chain change in a block up to this head was mined before it.
      const head = await deps.chain.head(ctx);
      const { dto, change } = await users.transaction(async (t) => {
        await lockAuthority(t, caller);
        const user = await t.lockByAddress(address);
        if (!user) throw UserErrors.notFound("No user has this address.");
        if (user.id === caller.userId) throw UserErrors.selfRole();
        const changed = user.role !== role;
        if (changed) {
          user.adminRoleAt = now();
          user.adminRoleBlock = head;
        }
        await changeRole(t, user, role, { changedBy: String(caller.userId), sourceTx: null }, ctx);
        // Repeated (the same role): the session is brought to the account's state again, which confirms
        // a change whose first answer was a 503; its revocation travels with its event.
        const change: SessionChange = {
          userId: user.id,
          address: user.address,
          version: Number(user.accountVersion),
          role,
          revoke: changed,
          deleted: false,
        };
        return { dto: toUserDto(user), change };
      }, ctx);
      await inForce(change, ctx);
      return dto;
    },

    setChainRole: (address, role, ctx) =>
      users.transaction((t) => applyChainRole(t, address, { kind: "read", role }, null, ctx), ctx),

    async applyChainStatus(fact, ctx) {
      const { chainId, txHash, logIndex } = fact.origin;
      // The fact's own key, not the message id: the same fact published again is still the same fact.
      const messageKey = `${chainId}:${txHash.toLowerCase()}:${logIndex}`;
      await users.transaction(async (t) => {
        if (!(await t.claimOnce("users", messageKey))) {
          ctx.log.debug({ messageKey }, "chain fact already applied");
          ctx.markDuplicate?.();
          return;
        }
        const applied = await applyChainRole(t, fact.address, chainFact(fact, now()), txHash, ctx);
        if (applied === null) ctx.log.debug({ messageKey }, "chain fact for an unknown address");
      }, ctx);
    },

    async retractChainStatus(retraction, ctx) {
      if (retraction.retracted !== USER_STATUS_FACT) return;
      const { chainId, txHash, logIndex, blockNumber, blockTimestamp } = retraction.origin;
      const messageKey = `retracted:${chainId}:${txHash.toLowerCase()}:${logIndex}`;
      await users.transaction(async (t) => {
        if (!(await t.claimOnce("users", messageKey))) return ctx.markDuplicate?.();
        // The user whose last applied chain fact is the retracted one (a later fact was not retracted).
        for (const user of await t.lockByChainPosition(blockNumber, logIndex)) {
          const role = await deps.chain.role(user.address, ctx);
          user.chainRole = role;
          user.chainRoleBlock = null;
          user.chainRoleLogIndex = null;
          await t.save();
          // An admin's change made after the retracted fact stands, as it stood against that fact.
          const adminIsNewer =
            user.adminRoleAt != null &&
            (blockTimestamp === undefined ||
              adminChangeIsNewer(roleSourcesOf(user), new Date(blockTimestamp * 1000), blockNumber));
          if (!adminIsNewer && role !== user.role) {
            await changeRole(t, user, role, { changedBy: "chain", sourceTx: null }, ctx);
          }
          ctx.log.info({ userId: user.id, txHash, role }, "chain status fact retracted by a reorg");
        }
      }, ctx);
    },
  };
}
