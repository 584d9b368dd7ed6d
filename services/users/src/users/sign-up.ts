import {
  type RequestOf,
  type SessionChange,
  type SignUpProof,
  UsersEvents,
  type UsersRpc,
} from "@fundraise/protocol";
import type { User } from "./user.entity.ts";
import { UserErrors } from "./user.errors.ts";
import type { OpContext } from "./user.ports.ts";
import type { UniqueField, UserRepository, UserTx } from "./user.repository.ts";
import { type Profile, parseAddress, sameText, validateNewProfile } from "./user.validation.ts";

type NewUser = RequestOf<typeof UsersRpc.register>;

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

/** Deletes the user in this transaction and announces it; answers the session change it makes. */
export async function removeAndAnnounce(t: UserTx, user: User, ctx: OpContext): Promise<SessionChange> {
  const { id: userId, address } = user;
  const version = Number(user.accountVersion) + 1;
  t.remove(user);
  await t.save();
  await t.emit(UsersEvents.deleted, { userId, address, version }, ctx);
  return { userId, address, version, role: null, revoke: true, deleted: true };
}

/** Sign-up (rules.md §2 and §7.2) and the unique names it shares with profile changes. */
export interface SignUp {
  /**
   * Makes `wanted` address/e-mail/username free for `self` (or a new user): another user holding one of
   * them is a 409 naming which (address, then e-mail, then username), unless it is a stale sign-up, which
   * is deleted. Returns how many stale sign-ups were deleted.
   */
  clearWay(
    t: UserTx,
    self: User | undefined,
    wanted: Partial<Record<UniqueField, string>>,
    ctx: OpContext,
  ): Promise<number>;
  /** A pending sign-up is never changed by another register. */
  register(input: NewUser, ctx: OpContext): Promise<{ userId: number; replaced: boolean; resent: boolean }>;
}

export function createSignUp(deps: { users: UserRepository; now: () => Date }): SignUp {
  const { users, now } = deps;

  /** An unverified sign-up whose link expired: it blocks nothing and is replaced by whoever needs its names. */
  const isStale = (user: User) =>
    !user.isVerified && user.pendingUntil != null && user.pendingUntil.getTime() <= now().getTime();

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

  async function register(input: NewUser, ctx: OpContext) {
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
      if (existing && (existing.isVerified || existing.pendingUntil == null)) throw UserErrors.addressTaken();
      let replacedPending = false;
      if (existing && !isStale(existing)) {
        // A pending sign-up is never changed by another register (rules.md §7.2): the legacy `REGISTER`
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
    }, ctx);
  }

  return { clearWay, register };
}
