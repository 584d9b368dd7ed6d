import type { Caller } from "@fundraise/protocol";
import type { Permission, Project } from "./project.entity.ts";
import { ProjectErrors } from "./project.errors.ts";
import type { ProjectRepository } from "./project.repository.ts";
import { scopeOf, sees } from "./project.validation.ts";

export interface Seen {
  project: Project;
  /** The caller's permission row on it (accepted or pending), if any. */
  permission: Permission | null;
}

/** A project the caller may see, with the caller's permission: missing or hidden are both 404. */
export async function findVisible(
  projects: ProjectRepository,
  caller: Caller | null,
  id: number,
): Promise<Seen> {
  const [project, permission] = await Promise.all([
    projects.findById(id),
    caller ? projects.permissionOf(id, caller.userId) : Promise.resolve(null),
  ]);
  if (!project || !sees(scopeOf(caller), project, permission !== null)) throw ProjectErrors.notFound();
  return { project, permission };
}

export const isAccepted = (permission: Permission | null): permission is Permission =>
  permission?.isAccepted === true;

/** An accepted Owner or Co-Owner: may invite, and remove Editors and invitations. */
export const isManager = (permission: Permission | null): boolean =>
  isAccepted(permission) && (permission.role === "Owner" || permission.role === "Co-Owner");
