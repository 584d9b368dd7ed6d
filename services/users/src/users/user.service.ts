import { type Caller, type RequestOf, UsersEvents, UsersRpc } from "@fundraise/protocol";
import { requireRole } from "./access.ts";
import { createInForce } from "./after-commit.ts";
import { createRoles, type Roles } from "./roles.ts";
import { createSignUp, removeAndAnnounce, type SignUp } from "./sign-up.ts";
import { UserErrors } from "./user.errors.ts";
import {
  type Invitation,
  toUserAccount,
  toUserDto,
  type UserAccountOut,
  type UserDtoOut,
} from "./user.mapper.ts";
import type { ApplySession, ChainIndex, OpContext, PendingInvitations, ProjectFence } from "./user.ports.ts";
import type { UserRepository, UserTx } from "./user.repository.ts";
import { sameText, validateProfile } from "./user.validation.ts";

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
  /** Sign-up rules of rules.md §2 and §7.2 (a pending sign-up is never changed by another register). */
  register: SignUp["register"];
  byAddress(address: string): Promise<UserAccountOut | null>;
  /** For the projects service: a user named by username (any case), or null. */
  byUsername(username: string): Promise<UserDtoOut | null>;
  /** For the projects service: the users with these ids that exist, in id order. */
  byIds(ids: number[]): Promise<UserDtoOut[]>;
  /** Idempotent; refused when the e-mail changed since the link was sent. */
  markVerified(userId: number, mailAddress: string, ctx: OpContext): Promise<UserAccountOut>;
}

export function createUserService(deps: UserServiceDeps): UserService {
  const { users } = deps;
  const now = deps.now ?? (() => new Date());
  const inForce = createInForce(deps);
  const { lockAuthority, ...roles } = createRoles({ users, chain: deps.chain, inForce, now });
  const { clearWay, register } = createSignUp({ users, now });

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
    }, ctx);
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
      }, ctx);
    },

    deleteSelf: (caller, ctx) => removeUser(caller.userId, null, ctx),

    async deleteById(caller, id, ctx) {
      requireRole(UsersRpc.delete, caller);
      if (id === caller.userId) throw UserErrors.selfDelete();
      await removeUser(id, caller, ctx);
    },

    async list(caller) {
      requireRole(UsersRpc.list, caller);
      return (await users.listAll()).map((u) => toUserDto(u));
    },

    register,

    async byAddress(address) {
      const account = await users.findAccountByAddress(address);
      return account ? toUserAccount(account) : null;
    },

    async byUsername(username) {
      // No stored username holds a NUL, and PostgreSQL's text cannot carry one into a query.
      if (username.includes("\u0000")) return null;
      const user = await users.findByUsername(username.trim());
      return user ? toUserDto(user) : null;
    },

    byIds: async (ids) => (await users.findByIds([...new Set(ids)])).map((u) => toUserDto(u)),

    markVerified: (userId, mailAddress, ctx) =>
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
      }, ctx),
  };
}
