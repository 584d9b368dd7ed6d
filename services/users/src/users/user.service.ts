import {
  type Caller,
  type RequestOf,
  type SessionChange,
  type SignUpProof,
  UsersEvents,
  type UsersRpc,
} from "@fundraise/protocol";
import { createInForce } from "./after-commit.ts";
import { createRoles, type Roles } from "./roles.ts";
import type { User } from "./user.entity.ts";
import { UserErrors } from "./user.errors.ts";
import {
  type Invitation,
  toUserAccount,
  toUserDto,
  type UserAccountOut,
  type UserDtoOut,
} from "./user.mapper.ts";
import type { ApplySession, ChainIndex, OpContext, PendingInvitations, ProjectFence } from "./user.ports.ts";
import type { UniqueField, UserRepository, UserTx } from "./user.repository.ts";
import {
  type Profile,
  parseAddress,
  sameText,
  validateNewProfile,
  validateProfile,
} from "./user.validation.ts";

export type { ApplySession, ChainIndex, OpContext, PendingInvitations, ProjectFence };

export interface UserServiceDeps {
  users: UserRepository;
  projects: ProjectFence;
  sessions: ApplySession;
  chain: ChainIndex;
  /** Absent: `get` answers `invitations: null`. */
  pendingInvitations?: PendingInvitations;
  now?: () => Date;
}

type UserUpdate = RequestOf<typeof UsersRpc.update>["user"];
type NewUser = RequestOf<typeof UsersRpc.register>;

/** The users service's use cases; role changes are `roles.ts`'s. */
export interface UserService extends Omit<Roles, "lockAuthority"> {
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
  /** Sign-up rules of behaviour.md §2 and §7 (a pending sign-up is never changed by another register). */
  register(input: NewUser, ctx: OpContext): Promise<{ userId: number; replaced: boolean; resent: boolean }>;
  byAddress(address: string): Promise<UserAccountOut | null>;
  /** For the projects service: a user named by username (any case), or null. */
  byUsername(username: string): Promise<UserDtoOut | null>;
  /** For the projects service: the users with these ids that exist, in id order. */
  byIds(ids: number[]): Promise<UserDtoOut[]>;
  /** Idempotent; refused when the e-mail changed since the link was sent. */
  markVerified(userId: number, mailAddress: string): Promise<UserAccountOut>;
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

export function createUserService(deps: UserServiceDeps): UserService {
  const { users } = deps;
  const now = deps.now ?? (() => new Date());
  const inForce = createInForce(deps);
  const { lockAuthority, ...roles } = createRoles({ users, chain: deps.chain, inForce, now });

  /** An unverified sign-up whose link expired: it blocks nothing and is replaced by whoever needs its names. */
  const isStale = (user: User) =>
    !user.isVerified && user.pendingUntil != null && user.pendingUntil.getTime() <= now().getTime();

  function requireAdmin(caller: Caller): void {
    if (caller.role !== "Admin") throw UserErrors.adminOnly();
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
    ...roles,
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
  };
}
