import type { TraceContext } from "@fundraise/bus";
import { type PayloadOf, type ProjectChange, ProjectsEvents } from "@fundraise/protocol";
import type { Permission, Project } from "./project.entity.ts";
import { toPermission } from "./project.mapper.ts";
import type { ProjectTx } from "./project.repository.ts";

/** Who saw a project: its state and permission rows (the inputs of rules.md §4.2's rule). */
export type Audience = NonNullable<PayloadOf<typeof ProjectsEvents.changed>["before"]>;

/** Read inside the changing transaction, after the project's lock and before the change. */
export async function audienceOf(t: Pick<ProjectTx, "memberIds">, project: Project): Promise<Audience> {
  return {
    viewerAccepted: project.viewerAccepted,
    status: project.status as Audience["status"],
    memberIds: await t.memberIds(project.id),
  };
}

/**
 * Announces a change to a project, in its transaction (the outbox): the gateway's event stream reads it
 * and sends each subscriber the project as a read would answer it now, or its leaving their view.
 */
export function announce(
  t: Pick<ProjectTx, "emit">,
  projectId: number,
  change: ProjectChange,
  before: Audience | null,
  ctx: TraceContext,
  indexedBlock?: number,
): Promise<void> {
  const payload = { projectId, change, before, ...(indexedBlock === undefined ? {} : { indexedBlock }) };
  return t.emit(ProjectsEvents.changed, payload, ctx);
}

/** Announces an invitation's creation, withdrawal or acceptance to its invitee's streams. */
export function announceInvitation(
  t: Pick<ProjectTx, "emit">,
  change: PayloadOf<typeof ProjectsEvents.invitationChanged>["change"],
  permission: Permission,
  ctx: TraceContext,
): Promise<void> {
  return t.emit(ProjectsEvents.invitationChanged, { change, invitation: toPermission(permission) }, ctx);
}
