import {
  type Caller,
  type PayloadOf,
  ProjectsEvents,
  type ProjectsRpc,
  type ResponseOf,
  UsersEvents,
  visibleTo,
} from "@fundraise/protocol";
import type { LiveEntry } from "./log.ts";
import type { Outbound } from "./messages.ts";

export type ProjectView = ResponseOf<typeof ProjectsRpc.views>[number];
type Changed = PayloadOf<typeof ProjectsEvents.changed>;
type InvitationChanged = PayloadOf<typeof ProjectsEvents.invitationChanged>;
type RoleChanged = PayloadOf<typeof UsersEvents.roleChanged>;

/** An entry of the log made ready to send: what it is about, read once for every subscriber. */
export type Prepared = { offset: number } & (
  | { kind: "project"; changed: Changed; view: ProjectView | null; data: Map<string, string> }
  | { kind: "invitation"; userId: number; data: string }
  /**
   * `revokesBelow`: an admin's change revokes the user's tokens of earlier account versions (ADR 0014);
   * null for a chain change, which does not.
   */
  | { kind: "role"; userId: number; data: string; revokesBelow: number | null }
  | { kind: "user-deleted"; userId: number }
  | { kind: "none" }
);

/** Remembers recent message ids: a copy an outbox relay published twice is sent once. */
export class SeenIds {
  private readonly ids = new Set<string>();
  constructor(private readonly max = 10_000) {}
  /** True the first time an id is offered. */
  first(id: string | undefined): boolean {
    if (id === undefined) return true;
    if (this.ids.has(id)) return false;
    this.ids.add(id);
    if (this.ids.size > this.max) this.ids.delete(this.ids.values().next().value as string);
    return true;
  }
}

/**
 * Turns entries into what subscribers are sent: the projects they name are read once (the projects
 * service's `views`, as a read would answer now), so fan-out applies the visibility rule per subscriber
 * without a call each.
 */
export async function prepare(
  entries: LiveEntry[],
  views: (ids: number[]) => Promise<ProjectView[]>,
  seen: SeenIds,
): Promise<Prepared[]> {
  const fresh = entries.map((e) => (seen.first(e.messageId) ? e : { ...e, routingKey: "" }));
  const wanted = new Set<number>();
  for (const e of fresh) {
    if (e.routingKey !== ProjectsEvents.changed.name) continue;
    const changed = e.payload as Changed;
    if (changed.change !== "deleted") wanted.add(changed.projectId);
  }
  const found = new Map<number, ProjectView>();
  const ids = [...wanted];
  for (let i = 0; i < ids.length; i += 100) {
    for (const view of await views(ids.slice(i, i + 100))) found.set(view.project.projectID, view);
  }
  return fresh.map((e): Prepared => {
    const offset = e.offset;
    switch (e.routingKey) {
      case ProjectsEvents.changed.name: {
        const changed = e.payload as Changed;
        return {
          offset,
          kind: "project",
          changed,
          view: found.get(changed.projectId) ?? null,
          data: new Map(),
        };
      }
      case ProjectsEvents.invitationChanged.name: {
        const payload = e.payload as InvitationChanged;
        return {
          offset,
          kind: "invitation",
          userId: payload.invitation.userID,
          data: JSON.stringify(payload),
        };
      }
      case UsersEvents.roleChanged.name: {
        const { userId, role, previousRole, changedBy, version } = e.payload as RoleChanged;
        const revokesBelow = changedBy === "chain" ? null : (version ?? Number.MAX_SAFE_INTEGER);
        return { offset, kind: "role", userId, data: JSON.stringify({ role, previousRole }), revokesBelow };
      }
      case UsersEvents.deleted.name:
        return { offset, kind: "user-deleted", userId: (e.payload as { userId: number }).userId };
      default:
        return { offset, kind: "none" };
    }
  });
}

/**
 * The message one subscriber gets for a project change, or null: the project as a read answers it now
 * when the subscriber sees it now; `deleted` when they saw it before and do not now (it left their view);
 * nothing when they saw it neither before nor now, so a hidden project's id never reaches them.
 */
export function projectMessageFor(
  caller: Caller | null,
  p: Extract<Prepared, { kind: "project" }>,
): Outbound | null {
  const { changed, view } = p;
  const member = (ids: number[]) => caller !== null && ids.includes(caller.userId);
  const before =
    changed.before !== null && visibleTo(caller, changed.before, member(changed.before.memberIds));
  const now = view !== null && visibleTo(caller, view.project, member(view.memberIds));
  let change: string;
  if (now) {
    // A membership change shows only to those whose view it changed.
    if (changed.change === "members" && before) return null;
    change = changed.change === "members" ? "updated" : changed.change;
  } else if (before) change = "deleted";
  else return null;
  let data = p.data.get(change);
  if (data === undefined) {
    const indexed = changed.indexedBlock === undefined ? {} : { indexedBlock: changed.indexedBlock };
    data = JSON.stringify(
      change === "deleted"
        ? { change, project: { projectID: changed.projectId }, ...indexed }
        : { change, project: view?.project, ...indexed },
    );
    p.data.set(change, data);
  }
  return { id: String(p.offset), event: "project", data };
}
