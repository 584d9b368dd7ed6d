import type { UserRole } from "./common.ts";
import type { RpcDescriptor } from "./message.ts";
import { ProjectsRpc } from "./projects.ts";
import { UsersRpc } from "./users.ts";

/**
 * Admin and Viewer: the reviewers. They see every project (visibility.ts) and review proposals (the
 * viewer's queue and reply).
 */
export const REVIEWER_ROLES = ["Viewer", "Admin"] as const satisfies readonly UserRole[];

export const isReviewer = (role: UserRole): boolean => (REVIEWER_ROLES as readonly UserRole[]).includes(role);

/**
 * The RPCs only some roles may call, by RPC name, and those roles. The service that answers one refuses
 * every other role before anything else (403 ROLE_FORBIDDEN), reading it here (`roleAdmits`); the gateway's
 * route for it admits the same roles (its `access`), and services/gateway/src/routes/access.test.ts fails
 * when the two differ. An RPC not listed here has no role list: its service decides from the caller and the
 * data (Blacklist read-only, members, Admin for every file hash).
 */
export const RPC_ROLES: Readonly<Record<string, readonly UserRole[]>> = {
  [UsersRpc.delete.name]: ["Admin"],
  [UsersRpc.list.name]: ["Admin"],
  [UsersRpc.updateRole.name]: ["Admin"],
  [ProjectsRpc.viewerReply.name]: REVIEWER_ROLES,
  [ProjectsRpc.viewerQueue.name]: REVIEWER_ROLES,
};

/** Whether `role` may call `rpc` as far as roles go: listed in RPC_ROLES, or the RPC has no list. */
export function roleAdmits(rpc: Pick<RpcDescriptor, "name">, role: UserRole): boolean {
  const roles = RPC_ROLES[rpc.name];
  return roles === undefined || roles.includes(role);
}

/** Roles as a refusal names them: "an Admin", "a Viewer or an Admin". */
export const rolesInWords = (roles: readonly UserRole[]): string =>
  roles.map((role) => `${/^[AEIOU]/.test(role) ? "an" : "a"} ${role}`).join(" or ");
