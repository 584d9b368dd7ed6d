/** On-chain `ProjectRegistry.UserStatus` enum values. */
export const UserStatus = { Default: 0, Whitelisted: 1, Blacklisted: 2, Viewer: 3 } as const;
export type UserStatusName = keyof typeof UserStatus;

/** Platform role derived from the chain. */
export type ChainRole = "Admin" | "Whitelist" | "Viewer" | "Base" | "Blacklist";

/** keccak256("ADMIN_ROLE"): the registry role that makes an address an Admin. */
export const ADMIN_ROLE = "0xa49807205ce4d355092ef5a8a18f56e8913cf4a201fbe287825b095693c21775";

/**
 * The chain role rule: Admin when the address holds the registry's admin role, otherwise its user status
 * (Whitelisted → Whitelist, Blacklisted → Blacklist, Viewer → Viewer, anything else → Base).
 */
export function roleOf(status: number | bigint, isAdmin: boolean): ChainRole {
  if (isAdmin) return "Admin";
  switch (Number(status)) {
    case UserStatus.Whitelisted:
      return "Whitelist";
    case UserStatus.Blacklisted:
      return "Blacklist";
    case UserStatus.Viewer:
      return "Viewer";
    default:
      return "Base";
  }
}
