import type { RequestContext } from "@fundraise/bus";
import {
  type Caller,
  ChainEvents,
  type PayloadOf,
  type RequestOf,
  type SessionChange,
  type SignUpProof,
  type UserRole,
  UsersEvents,
  type UsersRpc,
} from "@fundraise/protocol";
import {
  adminChangeIsNewer,
  type ChainObservation,
  decideChainRole,
  type RoleSources,
} from "./role-precedence.ts";
import type { User } from "./user.entity.ts";
import { UserErrors } from "./user.errors.ts";
import {
  type Invitation,
  toUserAccount,
  toUserDto,
  type UserAccountOut,
  type UserDtoOut,
} from "./user.mapper.ts";
import type { UniqueField, UserRepository, UserTx } from "./user.repository.ts";
import {
  type Profile,
  parseAddress,
  parseRole,
  sameText,
  validateNewProfile,
  validateProfile,
} from "./user.validation.ts";

/** What a use case knows about the message that asked for it (a handler's `ctx`). */
export type OpContext = RequestContext;

/** Asks the projects service for a user's pending invitations; throws when it is unavailable or slow. */
export type PendingInvitations = (userId: number, ctx: OpContext) => Promise<Invitation[]>;

/**
 * The projects service, as a deletion needs it: inside the deletion's transaction, before it commits, the
 * user is fenced there (`projects.user.fence`, refused with 409 while they own a project), so no write of
 * theirs can add a project, membership, invitation or rating afterwards; a deletion that does not commit
 * lifts the fence again (`unfence`); one that commits removes the user's rows there before it answers
 * (`removeRows`; its event does the same later).
 */
export interface ProjectFence {
  fence(userId: number, ctx: OpContext): Promise<void>;
  unfence(userId: number, ctx: OpContext): Promise<void>;
  removeRows(userId: number, ctx: OpContext): Promise<void>;
}

/** The auth service's session (`auth.session.apply`): holds the change when this resolves. */
export type ApplySession = (change: SessionChange, ctx: OpContext) => Promise<void>;

export interface UserServiceDeps {
  users: UserRepository;
  projects: ProjectFence;
  sessions: ApplySession;
  /** Absent: `get` answers `invitations: null`. */
  pendingInvitations?: PendingInvitations;
  /** The chain role the index holds now (the chain-indexer's `chain.address.role`). */
  chainRole?: (address: string, ctx: OpContext) => Promise<UserRole>;
  /** The chain's head block as the index knows it now; null when it cannot tell (then times decide). */
  chainHead?: (ctx: OpContext) => Promise<number | null>;
  now?: () => Date;
}

type UserUpdate = RequestOf<typeof UsersRpc.update>["user"];
type NewUser = RequestOf<typeof UsersRpc.register>;
type UserStatusChanged = PayloadOf<typeof ChainEvents.userStatusChanged>;
type FactRetracted = PayloadOf<typeof ChainEvents.factRetracted>;

export interface UserService {
  /** Users who finished sign-up (verified e-mail): the platform's public head count. */
  countVerified(): Promise<number>;
  /** The caller's own user with its pending invitations (null when the projects service cannot tell). */
  get(caller: Caller, ctx: OpContext): Promise<UserDtoOut>;
  update(caller: Caller, changes: UserUpdate, ctx: OpContext): Promise<UserDtoOut>;
  deleteSelf(caller: Caller, ctx: OpContext): Promise<void>;
  /** Admin only; not the caller itself. */
  deleteById(caller: Caller, id: number, ctx: OpContext): Promise<void>;
  /** Admin only. */
  list(caller: Caller): Promise<UserDtoOut[]>;
  /** Admin only; the caller's own role cannot be changed. */
  updateRole(caller: Caller, address: string, role: string, ctx: OpContext): Promise<UserDtoOut>;
  /** Sign-up rules of behaviour.md §2 and §7 (a pending sign-up is never changed by another register). */
  register(input: NewUser, ctx: OpContext): Promise<{ userId: number; replaced: boolean; resent: boolean }>;
  byAddress(address: string): Promise<UserAccountOut | null>;
  /** For the projects service: a user named by username (any case), or null. */
  byUsername(username: string): Promise<UserDtoOut | null>;
  /** For the projects service: the users with these ids that exist, in id order. */
  byIds(ids: number[]): Promise<UserDtoOut[]>;
  /** Idempotent; refused when the e-mail changed since the link was sent. */
  markVerified(userId: number, mailAddress: string): Promise<UserAccountOut>;
  /** The role the chain gives `address`; null when no user has it. */
  setChainRole(address: string, role: UserRole, ctx: OpContext): Promise<UserAccountOut | null>;
  /** A chain fact, applied once per (chainId, txHash, logIndex). */
  applyChainStatus(fact: UserStatusChanged, ctx: OpContext): Promise<void>;
  /** A reorg removed a status fact: its user's role goes back to what the index says now. */
  retractChainStatus(retraction: FactRetracted, ctx: OpContext): Promise<void>;
}

/** The same sign-up data: username and e-mail case-insensitively (as they are unique), names exactly. */
const sameSignUp = (user: User, profile: Profile) =>
  sameText(user.username, profile.username) &&
  sameText(user.mailAddress, profile.mailAddress) &&
  user.name === profile.name &&
  user.surname === profile.surname;

const TAKEN: [UniqueField, () => Error][] = [
  ["address", UserErrors.addressTaken],
  ["mailAddress", UserErrors.emailTaken],
  ["username", UserErrors.usernameTaken],
];

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
/** Tries of a step after a commit before a 503, and the pause before the second (then twice as long). */
const SESSION_ATTEMPTS = 3;
const SESSION_RETRY_MS = 150;

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

export function createUserService(deps: UserServiceDeps): UserService {
  const { users } = deps;
  const now = deps.now ?? (() => new Date());

  /** An unverified sign-up whose link expired: it blocks nothing and is replaced by whoever needs its names. */
  const isStale = (user: User) =>
    !user.isVerified && user.pendingUntil != null && user.pendingUntil.getTime() <= now().getTime();

  function requireAdmin(caller: Caller): void {
    if (caller.role !== "Admin") throw UserErrors.adminOnly();
  }

  /**
   * An admin's write decides from the current state: the Admin rows locked (in id order, so admins acting on
   * each other are serialized) and the caller still among them. The gateway's role is of when the request
   * began; another admin may have demoted or deleted the caller since (two admins demoting each other at once
   * left no Admin). Answers the Admins' ids.
   */
  async function lockAuthority(t: UserTx, caller: Caller | null): Promise<number[]> {
    const admins = await t.lockAdmins();
    if (caller && !admins.includes(caller.userId)) throw UserErrors.adminOnly();
    return admins;
  }

  /** Deletes the user in this transaction and announces it; answers the session change it makes. */
  async function removeAndAnnounce(t: UserTx, user: User, ctx: OpContext): Promise<SessionChange> {
    const { id: userId, address } = user;
    const version = Number(user.accountVersion) + 1;
    t.remove(user);
    await t.save();
    await t.emit(UsersEvents.deleted, { userId, address, version }, ctx);
    return { userId, address, version, role: null, revoke: true, deleted: true };
  }

  /**
   * Fences the user in the projects service, inside this transaction and before it commits (refused
   * there while they own a project); lifted again if the transaction does not commit. A sign-up that
   * never verified needs none: it cannot sign in, and invitations name verified users only.
   */
  async function fence(t: UserTx, userId: number, ctx: OpContext): Promise<void> {
    await deps.projects.fence(userId, ctx);
    t.onRollback(() =>
      deps.projects.unfence(userId, ctx).catch((err: unknown) => {
        // The projects service's sweep lifts a fence whose user still exists after its grace period.
        ctx.log.error({ err, userId }, "fence of a user whose deletion failed not lifted");
      }),
    );
  }

  /**
   * What other services must hold of a committed change before it answers (behaviour.md §8, "at once"):
   * the session always; the projects service's rows of a deleted user. A few tries each within the
   * caller's deadline; if one cannot be reached, 503 (the change is saved; its event brings it there later,
   * and repeating an updaterole confirms it).
   */
  async function inForce(change: SessionChange, ctx: OpContext): Promise<void> {
    const steps = [() => deps.sessions(change, ctx)];
    if (change.deleted) steps.push(() => deps.projects.removeRows(change.userId, ctx));
    await Promise.all(steps.map((step) => retried(step, change.userId, ctx)));
  }

  async function retried(step: () => Promise<void>, userId: number, ctx: OpContext): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await step();
      } catch (cause) {
        if (attempt >= SESSION_ATTEMPTS) throw UserErrors.sessionsPending(cause);
        ctx.log.warn({ err: cause, userId, attempt }, "a committed change not applied elsewhere yet");
        await new Promise((resolve) => setTimeout(resolve, SESSION_RETRY_MS * attempt));
      }
    }
  }

  /**
   * Makes `wanted` address/e-mail/username free for `self` (or a new user): another user holding one of
   * them is a 409 naming which (address, then e-mail, then username), unless it is a stale sign-up, which
   * is deleted. Returns how many stale sign-ups were deleted.
   */
  async function clearWay(
    t: UserTx,
    self: User | undefined,
    wanted: Partial<Record<UniqueField, string>>,
    ctx: OpContext,
  ): Promise<number> {
    const holders = await t.lockHolders(wanted, self?.id);
    const blocking = holders.filter((holder) => !isStale(holder));
    for (const [field, taken] of TAKEN) {
      if (wanted[field] !== undefined && blocking.some((b) => sameText(b[field], wanted[field])))
        throw taken();
    }
    for (const stale of holders) await removeAndAnnounce(t, stale, ctx);
    return holders.length;
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

  /**
   * Deletion rules shared by deleteSelf and deleteById (`by`: the admin deleting); an owner is refused by the
   * projects service.
   */
  async function removeUser(id: number, by: Caller | null, ctx: OpContext): Promise<void> {
    const change = await users.transaction(async (t) => {
      const admins = await lockAuthority(t, by);
      const user = await t.lockById(id);
      if (!user) throw UserErrors.notFound();
      if (user.role === "Admin" && admins.length <= 1) throw UserErrors.lastAdmin();
      await fence(t, id, ctx);
      return removeAndAnnounce(t, user, ctx);
    });
    await inForce(change, ctx);
  }

  async function invitationsOf(userId: number, ctx: OpContext): Promise<Invitation[] | null> {
    if (!deps.pendingInvitations) return null;
    try {
      return await deps.pendingInvitations(userId, ctx);
    } catch (err) {
      ctx.log.debug({ err }, "pending invitations not available; answering invitations: null");
      return null;
    }
  }

  return {
    countVerified: () => users.countVerified(),

    async get(caller, ctx) {
      const [user, invitations] = await Promise.all([
        users.findById(caller.userId),
        invitationsOf(caller.userId, ctx),
      ]);
      if (!user) throw UserErrors.notFound();
      return toUserDto(user, invitations);
    },

    async update(caller, changes, ctx) {
      if (caller.role === "Blacklist") throw UserErrors.blacklisted();
      const fields = validateProfile(changes);
      return users.transaction(async (t) => {
        const user = await t.lockById(caller.userId);
        if (!user) throw UserErrors.notFound();
        const emailChanged =
          fields.mailAddress !== undefined && !sameText(fields.mailAddress, user.mailAddress);
        const usernameChanged = fields.username !== undefined && !sameText(fields.username, user.username);
        await clearWay(
          t,
          user,
          {
            ...(emailChanged ? { mailAddress: fields.mailAddress } : {}),
            ...(usernameChanged ? { username: fields.username } : {}),
          },
          ctx,
        );
        Object.assign(user, fields);
        if (emailChanged) {
          // Unverified until the new link is followed; never "stale": an account is not a sign-up.
          user.isVerified = false;
          user.pendingUntil = null;
        }
        await t.save();
        if (emailChanged) {
          await t.emit(
            UsersEvents.emailChanged,
            { userId: user.id, address: user.address, mailAddress: user.mailAddress as string },
            ctx,
          );
        }
        return toUserDto(user);
      });
    },

    deleteSelf: (caller, ctx) => removeUser(caller.userId, null, ctx),

    async deleteById(caller, id, ctx) {
      requireAdmin(caller);
      if (id === caller.userId) throw UserErrors.selfDelete();
      await removeUser(id, caller, ctx);
    },

    async list(caller) {
      requireAdmin(caller);
      return (await users.listAll()).map((u) => toUserDto(u));
    },

    async updateRole(caller, addressInput, roleInput, ctx) {
      requireAdmin(caller);
      const role = parseRole(roleInput);
      if (!role) throw UserErrors.invalidRole(roleInput);
      const address = parseAddress(addressInput);
      if (!address) throw UserErrors.invalidAddress();
      // Read before the change: a chain change in a block up to this head was mined before it.
      const head = (await deps.chainHead?.(ctx)) ?? null;
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
      });
      await inForce(change, ctx);
      return dto;
    },

    async register(input, ctx) {
      const address = parseAddress(input.address);
      if (!address) throw UserErrors.invalidAddress();
      const profile = validateNewProfile(input);
      const pendingUntil = new Date(input.pendingUntil);
      if (Number.isNaN(pendingUntil.getTime())) throw UserErrors.invalidPendingUntil();
      const proof: SignUpProof = input.proof ?? "legacy";
      return users.transaction(async (t) => {
        // The same sign-up sent twice at once (a double click) is decided as if one came after the other:
        // the second sees the first's row (and re-sends), where a row lock could not stop it from looking
        // before that row exists, and a unique index would make it a 409.
        await t.lockSignUp(address);
        const existing = await t.lockByAddress(address);
        // A verified account, or one whose changed e-mail awaits its link (no deadline), is not a sign-up.
        if (existing && (existing.isVerified || existing.pendingUntil == null))
          throw UserErrors.addressTaken();
        let replacedPending = false;
        if (existing && !isStale(existing)) {
          // A pending sign-up is never changed by another register (behaviour.md §7): the legacy `REGISTER`
          // signature is constant, so whoever saw it could otherwise take the sign-up over.
          if (sameSignUp(existing, profile)) return { userId: existing.id, replaced: false, resent: true };
          // Only a fresh nonce proves the key holder is asking now: it replaces a replayable legacy proof.
          if (!(existing.proof === "legacy" && proof === "nonce")) throw UserErrors.addressTaken();
          await removeAndAnnounce(t, existing, ctx);
          replacedPending = true;
          ctx.log.info({ userId: existing.id }, "pending legacy sign-up replaced by a nonce-proven one");
        }
        // An expired sign-up of this address (or holding the e-mail or username) is deleted here.
        const removed = await clearWay(
          t,
          undefined,
          { address, mailAddress: profile.mailAddress, username: profile.username },
          ctx,
        );
        const user = t.create({ ...profile, address, role: "Base", isVerified: false, pendingUntil, proof });
        await t.save();
        // An admin's Blacklist of this address stands for the new account as it did for the deleted one.
        const sanction = await t.sanctionOf(address);
        if (sanction) {
          user.role = "Blacklist";
          user.adminRoleAt = sanction.at;
          user.adminRoleBlock = sanction.block;
          t.recordRoleChange({
            userId: user.id,
            previousRole: "Base",
            newRole: "Blacklist",
            changedBy: sanction.changedBy,
            sourceTx: null,
          });
          await t.save();
          ctx.log.info({ userId: user.id }, "an admin's Blacklist of the address applies to the new sign-up");
        }
        return { userId: user.id, replaced: replacedPending || removed > 0, resent: false };
      });
    },

    async byAddress(address) {
      const account = await users.findAccountByAddress(address);
      return account ? toUserAccount(account) : null;
    },

    async byUsername(username) {
      const user = await users.findByUsername(username.trim());
      return user ? toUserDto(user) : null;
    },

    byIds: async (ids) => (await users.findByIds([...new Set(ids)])).map((u) => toUserDto(u)),

    markVerified: (userId, mailAddress) =>
      users.transaction(async (t) => {
        const user = await t.lockById(userId);
        if (!user) throw UserErrors.notFound();
        if (!sameText(user.mailAddress, mailAddress)) throw UserErrors.emailChangedSinceLink();
        if (!user.isVerified) {
          user.isVerified = true;
          user.pendingUntil = null;
          await t.save();
        }
        return toUserAccount(user);
      }),

    setChainRole: (address, role, ctx) =>
      users.transaction((t) => applyChainRole(t, address, { kind: "read", role }, null, ctx)),

    async applyChainStatus(fact, ctx) {
      const { chainId, txHash, logIndex } = fact.origin;
      // The fact's own key, not the message id: the same fact published again is still the same fact.
      const messageKey = `${chainId}:${txHash.toLowerCase()}:${logIndex}`;
      await users.transaction(async (t) => {
        if (!(await t.claimOnce("users", messageKey))) {
          ctx.log.debug({ messageKey }, "chain fact already applied");
          return;
        }
        const applied = await applyChainRole(t, fact.address, chainFact(fact, now()), txHash, ctx);
        if (applied === null) ctx.log.debug({ messageKey }, "chain fact for an unknown address");
      });
    },

    async retractChainStatus(retraction, ctx) {
      if (retraction.retracted !== USER_STATUS_FACT) return;
      const { chainId, txHash, logIndex, blockNumber, blockTimestamp } = retraction.origin;
      const messageKey = `retracted:${chainId}:${txHash.toLowerCase()}:${logIndex}`;
      await users.transaction(async (t) => {
        if (!(await t.claimOnce("users", messageKey))) return;
        // The user whose last applied chain fact is the retracted one (a later fact was not retracted).
        for (const user of await t.lockByChainPosition(blockNumber, logIndex)) {
          if (!deps.chainRole) throw new Error("retracting a chain fact needs the chain index (chainRole)");
          const role = await deps.chainRole(user.address, ctx);
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
      });
    },
  };
}
