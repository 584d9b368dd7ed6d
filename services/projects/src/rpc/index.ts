import type { Bus } from "@fundraise/bus";
import { ProjectsRpc } from "@fundraise/protocol";
import type { ChainSync } from "../projects/chain.service.ts";
import type { MembershipService } from "../projects/membership.service.ts";
import type { ContentReleases } from "../projects/project.content.ts";
import type { ProjectService } from "../projects/project.service.ts";
import type { UserFenceService } from "../projects/user-fence.service.ts";

/** The projects service's RPC surface: each descriptor straight to its use case (rules in projects/). */
export async function serveProjectsRpc(
  bus: Bus,
  services: {
    projects: ProjectService;
    memberships: MembershipService;
    chain: ChainSync;
    fences: UserFenceService;
    releases: ContentReleases;
  },
): Promise<void> {
  const { projects: p, memberships: m, chain, fences, releases } = services;
  await bus.serve(ProjectsRpc.list, ({ caller }) => p.list(caller));
  await bus.serve(ProjectsRpc.get, ({ caller, id }) => p.get(caller, id));
  await bus.serve(ProjectsRpc.add, ({ caller, project }, ctx) => p.add(caller, project, ctx));
  await bus.serve(ProjectsRpc.update, ({ caller, project }, ctx) => p.update(caller, project, ctx));
  await bus.serve(ProjectsRpc.delete, async ({ caller, id }, ctx) => {
    await p.delete(caller, id, ctx);
    return null;
  });
  await bus.serve(ProjectsRpc.rate, ({ caller, id, rating }, ctx) => p.rate(caller, id, rating, ctx));
  await bus.serve(ProjectsRpc.byStatus, ({ caller, status }) => p.byStatus(caller, status));
  await bus.serve(ProjectsRpc.top, ({ caller, count }) => p.top(caller, count));
  await bus.serve(ProjectsRpc.hashes, ({ caller, onlyAuctionsStarted }) =>
    p.hashes(caller, onlyAuctionsStarted),
  );
  await bus.serve(ProjectsRpc.viewerQueue, ({ caller }) => p.viewerQueue(caller));
  await bus.serve(ProjectsRpc.viewerReply, ({ caller, id, reply }, ctx) =>
    p.viewerReply(caller, id, reply, ctx),
  );
  await bus.serve(ProjectsRpc.updateMarkdown, ({ caller, id, markDown }, ctx) =>
    p.updateMarkdown(caller, id, markDown, ctx),
  );
  await bus.serve(ProjectsRpc.listPermissioned, ({ caller }) => p.listPermissioned(caller));
  await bus.serve(ProjectsRpc.listTag, ({ caller }) => p.listTag(caller));
  await bus.serve(ProjectsRpc.views, ({ projectIds }) => p.views(projectIds));
  await bus.serve(ProjectsRpc.listInvited, ({ caller }) => p.listInvited(caller));
  await bus.serve(ProjectsRpc.syncStatus, ({ caller, id }, ctx) => chain.syncStatus(caller, id, ctx));
  await bus.serve(ProjectsRpc.syncAuction, ({ caller, id }, ctx) => chain.syncAuction(caller, id, ctx));
  // Memberships (the /user/* membership routes).
  await bus.serve(ProjectsRpc.invite, ({ caller, request }, ctx) => m.invite(caller, request, ctx));
  await bus.serve(ProjectsRpc.reply, async ({ caller, request }, ctx) => {
    await m.reply(caller, request, ctx);
    return null;
  });
  await bus.serve(ProjectsRpc.coOwners, ({ caller, projectID }, ctx) => m.coOwners(caller, projectID, ctx));
  await bus.serve(ProjectsRpc.removeCollaborator, async ({ caller, request }, ctx) => {
    await m.removeCollaborator(caller, request, ctx);
    return null;
  });
  // Asked by the users service (GET /user/get's invitations).
  await bus.serve(ProjectsRpc.pendingInvitations, ({ userId }) => m.pendingInvitations(userId));
  // Asked by the users service inside a deletion's transaction, and when that transaction failed.
  await bus.serve(ProjectsRpc.fenceUser, async ({ userId }, ctx) => {
    await fences.fence(userId, ctx);
    return null;
  });
  await bus.serve(ProjectsRpc.unfenceUser, async ({ userId }, ctx) => {
    await fences.unfence(userId, ctx);
    return null;
  });
  await bus.serve(ProjectsRpc.removeUser, async ({ userId }, ctx) => {
    await fences.removeUser(userId, ctx);
    return null;
  });
  // Asked by the storage service (orphan pins: content no project holds).
  await bus.serve(ProjectsRpc.heldContent, ({ fileHashes }) => p.heldContent(fileHashes));
  // Asked before anything unpins content (the storage service, the gateway for a refused write).
  await bus.serve(ProjectsRpc.releaseContent, ({ fileHashes, reason }) =>
    releases.release(fileHashes, reason),
  );
  await bus.serve(ProjectsRpc.confirmRelease, async ({ releases: done }) => {
    await releases.confirm(done);
    return null;
  });
}
