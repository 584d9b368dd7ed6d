import { type Caller, visibleTo } from "@fundraise/protocol";
import type { Permission, Project } from "./project.entity.ts";
import { ProjectErrors } from "./project.errors.ts";
import type { ProjectRepository } from "./project.repository.ts";

/** The rule of rules.md §4.2 is @fundraise/protocol's (visibility.ts): reads, lists and streams share it. */
export {
  inScope,
  type Scope,
  scopeOf,
  sharedListOf,
  type VisibilityFields,
  visibleTo,
} from "@fundraise/protocol";

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
  if (!project || !visibleTo(caller, project, permission !== null)) throw ProjectErrors.notFound();
  return { project, permission };
}
