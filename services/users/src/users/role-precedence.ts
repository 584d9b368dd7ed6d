import type { UserRole } from "@fundraise/protocol";

/**
 * Which role wins (rules.md §7.1). A role has two sources, an admin's `updaterole` and the chain; each
 * change is dated, and the newer one decides. What the chain said is always recorded, even when the
 * admin's newer decision keeps the role.
 */
export interface RoleSources {
  role: UserRole;
  /** The chain's role when last seen; null: never seen. */
  chainRole: UserRole | null;
  /** Position of the last chain fact applied; null: none yet (sign-in reads carry no position). */
  chainPosition: ChainPosition | null;
  /** When an admin last changed the role; null: never. */
  adminRoleAt: Date | null;
  /** The chain node's head block at that change (chain.index.progress); null: not known (then the time decides). */
  adminRoleBlock: number | null;
}

export interface ChainPosition {
  block: number;
  logIndex: number;
}

/** What the chain told us: a read of its current state (at sign-in), or a fact from the indexer. */
export type ChainObservation =
  | { kind: "read"; role: UserRole }
  | { kind: "fact"; role: UserRole; position: ChainPosition; at: Date };

export interface ChainDecision {
  /** Record the observation as the chain's last known state (and position, for a fact). */
  record: boolean;
  /** The role to set, or null to keep the current one. */
  role: UserRole | null;
}

const IGNORE: ChainDecision = { record: false, role: null };

export const isAfter = (a: ChainPosition, b: ChainPosition) =>
  a.block > b.block || (a.block === b.block && a.logIndex > b.logIndex);

/**
 * Whether an admin's change is newer than a chain change in block `chainBlock`, dated `chainAt`. The admin's
 * change records the node's head block, read as it was made: a change in a block up to it was mined before
 * the admin's, one in a later block after it (mined while the change was being made: a tie, the chain's).
 * The block decides, not the time: a block's timestamp is the node's choice and may trail the moment it
 * was mined (seen here: a block mined after an admin's change stamped 1.75 s before it). With no head known
 * (the node did not answer) the times decide, at whole seconds, and the chain wins a tie.
 */
export const adminChangeIsNewer = (
  admin: Pick<RoleSources, "adminRoleAt" | "adminRoleBlock">,
  chainAt: Date,
  chainBlock: number,
) => {
  if (admin.adminRoleAt === null) return false;
  if (admin.adminRoleBlock !== null) return chainBlock <= admin.adminRoleBlock;
  return Math.floor(admin.adminRoleAt.getTime() / 1000) > Math.floor(chainAt.getTime() / 1000);
};

export function decideChainRole(user: RoleSources, seen: ChainObservation): ChainDecision {
  const applies = (role: UserRole) => (role === user.role ? null : role);
  if (seen.kind === "fact") {
    // Facts may arrive late or twice: one at or before what was applied changes nothing.
    if (user.chainPosition && !isAfter(seen.position, user.chainPosition)) return IGNORE;
    const adminNewer = adminChangeIsNewer(user, seen.at, seen.position.block);
    return { record: true, role: adminNewer ? null : applies(seen.role) };
  }
  // A read: the chain changed only if it says something else than when last seen. When it was never seen,
  // its history is unknown and counts as older than an admin's explicit decision.
  if (seen.role === user.chainRole) return IGNORE;
  if (user.chainRole === null && user.adminRoleAt !== null) return { record: true, role: null };
  return { record: true, role: applies(seen.role) };
}
