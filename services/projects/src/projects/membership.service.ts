import type { AppError, Caller, ProjectsRpc, RequestOf } from "@fundraise/protocol";
import { announce, announceInvitation, audienceOf } from "./announce.ts";
import { isAccepted, isManager, requireLive, requireWriter } from "./project.access.ts";
import type { Permission } from "./project.entity.ts";
import { ProjectErrors } from "./project.errors.ts";
import { type PermissionOut, toPermission } from "./project.mapper.ts";
import type { OpContext, UserDirectory, UserDtoOut } from "./project.ports.ts";
import type { ProjectRepository } from "./project.repository.ts";
import { parseInvitedRole, parseUsername } from "./project.validation.ts";
import { findVisible } from "./visibility.ts";

export type PermissionRequest = RequestOf<typeof ProjectsRpc.invite>["request"];

export interface MembershipService {
  /** Owner or accepted Co-Owner; answers the new invitation's id. */
  invite(caller: Caller, request: PermissionRequest, ctx: OpContext): Promise<string>;
  /** The invitee accepts (membership) or declines (the invitation goes). */
  reply(caller: Caller, request: PermissionRequest, ctx: OpContext): Promise<void>;
  /**
   * The accepted Owner and Co-Owners as UserDTOs (members and Admin); `mailAddress` only to an Admin and
   * on the caller's own row (rules.md §8.10).
   */
  coOwners(caller: Caller, projectId: number, ctx: OpContext): Promise<UserDtoOut[]>;
  removeCollaborator(caller: Caller, request: PermissionRequest, ctx: OpContext): Promise<void>;
  pendingInvitations(userId: number): Promise<PermissionOut[]>;
}

/**
 * Who may remove `target` from a project (rules.md §3.10): anyone may leave, except the Owner; Owner and
 * Co-Owners remove Editors and pending invitations; only the Owner removes an accepted Co-Owner; nobody
 * removes the Owner; an accepted Co-Owner may not leave once the auction is created.
 */
export function removalRefusal(
  actor: Permission | null,
  target: Permission,
  self: boolean,
  auctionCreated: boolean,
): AppError | null {
  if (target.role === "Owner") {
    return ProjectErrors.ownerStays(
      self
        ? "The Owner cannot leave the project; delete the project instead."
        : "Nobody can remove the project's Owner.",
    );
  }
  if (self) {
    const leavingCoOwner = target.role === "Co-Owner" && target.isAccepted;
    return leavingCoOwner && auctionCreated
      ? ProjectErrors.auctionExists("a Co-Owner can no longer leave")
      : null;
  }
  if (!isManager(actor))
    return ProjectErrors.notMember("Only the project's Owner or a Co-Owner may remove others.");
  if (target.role === "Co-Owner" && target.isAccepted && actor?.role !== "Owner") {
    return ProjectErrors.notMember("Only the project's Owner may remove a Co-Owner.");
  }
  return null;
}

/** The membership rows of rules.md §3 (no SQL, no bus). Users are named by username, resolved by the users service. */
export function createMembershipService(deps: {
  projects: ProjectRepository;
  users: UserDirectory;
}): MembershipService {
  const { projects, users } = deps;

  return {
    async invite(caller, request, ctx) {
      const role = parseInvitedRole(request.role);
      const { permission } = await findVisible(projects, caller, request.projectID);
      requireWriter(caller);
      if (!isManager(permission))
        throw ProjectErrors.notMember("Only the project's Owner or a Co-Owner may invite.");
      const username = parseUsername(request.username);
      if (!username) throw ProjectErrors.invalid("/username", "is required");
      // Who is named is decided by id: the token's username may be older than a rename.
      const invitee = await users.byUsername(username, ctx);
      if (!invitee) throw ProjectErrors.userNotFound();
      if (invitee.id === caller.userId) throw ProjectErrors.selfInvite();
      return projects.transaction(async (t) => {
        // Neither the inviter nor the invitee may be a user whose deletion fenced them.
        await requireLive(t, caller, [invitee.id]);
        const project = await t.lockById(request.projectID);
        if (!project) throw ProjectErrors.notFound();
        const before = await audienceOf(t, project);
        // The inviter's right, read again under the project's lock: they may have left or been removed.
        if (!isManager(await t.lockPermission(request.projectID, caller.userId)))
          throw ProjectErrors.notMember("Only the project's Owner or a Co-Owner may invite.");
        if (await t.lockPermission(request.projectID, invitee.id)) throw ProjectErrors.invitationExists();
        const row = t.createPermission({
          projectId: request.projectID,
          userId: invitee.id,
          role,
          isAccepted: false,
        });
        await t.save();
        await announce(t, project.id, "members", before, ctx);
        await announceInvitation(t, "created", row, ctx);
        return String(row.id);
      });
    },

    async reply(caller, request, ctx) {
      if (request.isAccepted === undefined) throw ProjectErrors.invalid("/isAccepted", "is required");
      const accept = request.isAccepted;
      await projects.transaction(async (t) => {
        // A fenced user neither joins nor declines.
        await requireLive(t, caller);
        // The project's lock first, as every membership change takes it.
        const project = await t.lockById(request.projectID);
        const invitation = project && (await t.lockPermission(project.id, caller.userId));
        if (!project || !invitation || invitation.isAccepted) throw ProjectErrors.invitationNotFound();
        // Blacklist may decline, not join (rules.md §8.1).
        if (accept) requireWriter(caller);
        const before = await audienceOf(t, project);
        if (accept) invitation.isAccepted = true;
        else t.remove(invitation);
        await t.save();
        // Accepting changes nobody's view (an invitation already shows the project); declining may.
        if (!accept) await announce(t, project.id, "members", before, ctx);
        await announceInvitation(t, accept ? "accepted" : "withdrawn", invitation, ctx);
      });
    },

    async coOwners(caller, projectId, ctx) {
      const { permission } = await findVisible(projects, caller, projectId);
      if (caller.role !== "Admin" && !isAccepted(permission)) throw ProjectErrors.notMember();
      const rows = await projects.membersWithRole(projectId, ["Owner", "Co-Owner"]);
      if (rows.length === 0) return [];
      const found = await users.byIds(
        rows.map((r) => r.userId),
        ctx,
      );
      const byId = new Map(found.map((u) => [u.id, u]));
      const mailVisible = (u: UserDtoOut) => caller.role === "Admin" || u.id === caller.userId;
      return rows.flatMap((r) => {
        const user = byId.get(r.userId);
        if (!user) return [];
        return mailVisible(user) ? [user] : [{ ...user, mailAddress: null }];
      });
    },

    async removeCollaborator(caller, request, ctx) {
      const { project } = await findVisible(projects, caller, request.projectID);
      const username = parseUsername(request.username);
      let targetId = caller.userId;
      // Resolved even when it looks like the caller's own: the token's username may be older than a rename,
      // and another user may hold it now.
      if (username) {
        const user = await users.byUsername(username, ctx);
        if (!user) throw ProjectErrors.userNotFound();
        targetId = user.id;
      }
      const self = targetId === caller.userId;
      // Blacklist may leave, not remove others (rules.md §8.1).
      if (!self) requireWriter(caller);
      await projects.transaction(async (t) => {
        await requireLive(t, caller);
        const locked = await t.lockById(project.id);
        if (!locked) throw ProjectErrors.notFound();
        const before = await audienceOf(t, locked);
        const actor = await t.lockPermission(project.id, caller.userId);
        if (!self && !isManager(actor)) {
          throw ProjectErrors.notMember("Only the project's Owner or a Co-Owner may remove others.");
        }
        const target = self ? actor : await t.lockPermission(project.id, targetId);
        if (!target) throw ProjectErrors.membershipNotFound();
        // Leaving is what Blacklist may do, not as the Owner: its Owner's leave is a write like any other.
        if (self && target.role === "Owner") requireWriter(caller);
        const refusal = removalRefusal(actor, target, self, locked.isAuctionCreated);
        if (refusal) throw refusal;
        t.remove(target);
        await t.save();
        await announce(t, project.id, "members", before, ctx);
        if (!target.isAccepted) await announceInvitation(t, "withdrawn", target, ctx);
      });
    },

    async pendingInvitations(userId) {
      return (await projects.pendingOfUser(userId)).map(toPermission);
    },
  };
}
