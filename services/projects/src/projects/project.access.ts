import { type Caller, RPC_ROLES, type RpcDescriptor, roleAdmits, rolesInWords } from "@fundraise/protocol";
import type { Permission } from "./project.entity.ts";
import { ProjectErrors } from "./project.errors.ts";
import type { ProjectTx } from "./project.repository.ts";

export const isAccepted = (permission: Permission | null): permission is Permission =>
  permission?.isAccepted === true;

/** An accepted Owner or Co-Owner: may invite, and remove Editors and invitations. */
export const isManager = (permission: Permission | null): boolean =>
  isAccepted(permission) && (permission.role === "Owner" || permission.role === "Co-Owner");

/**
 * An RPC only some roles may call (protocol RPC_ROLES, the list its gateway route admits too) refuses every
 * other role with 403, before anything else; `what` names what those roles may do.
 */
export function requireRole(rpc: RpcDescriptor, caller: Caller, what: string): void {
  if (!roleAdmits(rpc, caller.role)) {
    throw ProjectErrors.roleForbidden(`Only ${rolesInWords(RPC_ROLES[rpc.name] ?? [])} may ${what}.`);
  }
}

/**
 * Blacklist is read-only (rules.md §8.1): a write it is not allowed is 403, whatever its membership. Asked
 * after the project is known to be visible to the caller (404 before 403).
 */
export function requireWriter(caller: Caller): void {
  if (caller.role === "Blacklist") throw ProjectErrors.blacklisted();
}

/**
 * The users a write is made for still exist: none is fenced by a deletion (read in the write's own
 * transaction, under their shared locks, so a deletion fencing them waits for it, and sees what it wrote).
 * The caller fenced: 401 (the account is gone); another user (an invitee): 404, as a user that does not exist.
 * First in every write's transaction (after the review queue's lock): a deletion's clean-up holds the
 * user's lock while it locks rows, so a write must not hold a row while it waits for that lock.
 */
export async function requireLive(t: ProjectTx, caller: Caller, others: number[] = []): Promise<void> {
  const fenced = await t.fencedAmong([caller.userId, ...others]);
  if (fenced.includes(caller.userId)) throw ProjectErrors.accountGone();
  if (fenced.length > 0) throw ProjectErrors.userNotFound();
}
