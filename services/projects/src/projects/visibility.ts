import type { Caller } from "@fundraise/protocol";
import type { Permission, Project } from "./project.entity.ts";
import { ProjectErrors } from "./project.errors.ts";
import type { ProjectRepository } from "./project.repository.ts";

/**
 * Who sees which project (behaviour.md §4), stated once: Admin and Viewer every project; everyone else the
 * projects they belong to (a permission row, accepted or invited) plus the open ones: viewer-accepted, and
 * Approved too unless the caller is Whitelist (anonymous callers included). Single reads (`findVisible`),
 * lists (the repository turns `open` and `memberId` into its query), the hot-read cache (`sharedListOf`)
 * and any per-subscriber check (`visibleTo`) all read it here.
 */
export type Scope =
  | { all: true }
  | {
      all: false;
      /** The values a project's fields must have to be open to the caller (a query's filter as it is). */
      open: Partial<Pick<Project, "viewerAccepted" | "status">>;
      /** The caller whose memberships count too; null when anonymous. */
      memberId: number | null;
    };

/** The fields of a project the rule reads. */
export type VisibilityFields = Pick<Project, "viewerAccepted" | "status">;

export function scopeOf(caller: Caller | null): Scope {
  if (caller && (caller.role === "Admin" || caller.role === "Viewer")) return { all: true };
  const open =
    caller?.role === "Whitelist" ? { viewerAccepted: true } : { viewerAccepted: true, status: "Approved" };
  return { all: false, open, memberId: caller?.userId ?? null };
}

/** The rule for one project in a scope, given whether the caller has a permission row on it. */
export function inScope(scope: Scope, project: VisibilityFields, isMember: boolean): boolean {
  if (scope.all || isMember) return true;
  return (Object.keys(scope.open) as (keyof VisibilityFields)[]).every((f) => project[f] === scope.open[f]);
}

/**
 * Whether `caller` (null: anonymous) sees `project`, given its permission row on it (accepted or pending;
 * null: none). Pure: a caller of the rule brings what it read.
 */
export const visibleTo = (
  caller: Caller | null,
  project: VisibilityFields,
  membership: Pick<Permission, "isAccepted"> | null,
): boolean => inScope(scopeOf(caller), project, membership !== null);

/**
 * The name of the list every caller of this scope shares (the hot-read cache's key), or null when the list
 * depends on the caller's memberships.
 */
export function sharedListOf(scope: Scope): string | null {
  if (scope.all) return "all";
  return scope.memberId === null ? `open:${JSON.stringify(scope.open)}` : null;
}

export interface Seen {
  project: Project;
  /** The caller's permission row on it (accepted or pending), if any. */
  permission: Permission | null;
}

/**
 * A project the caller may see, with the caller's permission: missing or hidden are both 404. A caller
 * whose deletion fenced them is 401 first (their rows may already be gone: the answer does not depend on it).
 */
export async function findVisible(
  projects: Pick<ProjectRepository, "findById" | "permissionOf" | "isFenced">,
  caller: Caller | null,
  id: number,
): Promise<Seen> {
  const [project, permission, fenced] = await Promise.all([
    projects.findById(id),
    caller ? projects.permissionOf(id, caller.userId) : Promise.resolve(null),
    caller ? projects.isFenced(caller.userId) : Promise.resolve(false),
  ]);
  if (fenced) throw ProjectErrors.accountGone();
  if (!project || !visibleTo(caller, project, permission)) throw ProjectErrors.notFound();
  return { project, permission };
}
