import { ProjectsRpc, UsersRpc } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import { addProject, expectAppError, seed, setReview, useHarness } from "../test/harness.ts";

// Memberships (rules.md §3 rows) over RabbitMQ, with the real users service resolving usernames.
const h = useHarness("memberships");

type Seeded = Awaited<ReturnType<typeof seed>>;
const request = (projectID: number, extra: Record<string, unknown> = {}) => ({ projectID, ...extra });
/** `by` invites to project `id` (`extra`: username, role). */
const invite = (by: Seeded, id: number, extra: Record<string, unknown> = {}) =>
  h.client.call(ProjectsRpc.invite, { caller: by.caller, request: request(id, extra) });
/** `who` answers its invitation to project `id` (`extra`: isAccepted). */
const reply = (who: Seeded, id: number, extra: Record<string, unknown> = {}) =>
  h.client.call(ProjectsRpc.reply, { caller: who.caller, request: request(id, extra) });

async function team() {
  const owner = await seed(h);
  const project = await addProject(h, owner.caller);
  return { owner, project, id: project.projectID };
}

async function join(id: number, by: Seeded, who: Seeded, role: "Co-Owner" | "Editor") {
  await invite(by, id, { username: who.user.username, role });
  await reply(who, id, { isAccepted: true });
}

describe("invite and reply", () => {
  it("the Owner invites by username (any case); the invitee sees it, accepts and becomes a member", async () => {
    const { owner, project, id } = await team();
    const invitee = await seed(h);
    const invitationId = await invite(owner, id, { username: invitee.user.username.toUpperCase() });
    expect(invitationId).toMatch(/^[0-9]+$/);
    expect(await h.client.call(ProjectsRpc.pendingInvitations, { userId: invitee.user.id })).toEqual([
      { id: Number(invitationId), projectID: id, userID: invitee.user.id, role: "Editor", isAccepted: false },
    ]);
    // The users service's GET /user/get carries them.
    expect((await h.client.call(UsersRpc.get, { caller: invitee.caller })).invitations).toHaveLength(1);
    expect(
      (await h.client.call(ProjectsRpc.listInvited, { caller: invitee.caller })).map((p) => p.projectID),
    ).toEqual([id]);
    // An invitee sees the project it is invited to.
    expect((await h.client.call(ProjectsRpc.get, { caller: invitee.caller, id })).projectID).toBe(id);
    expect(await h.client.call(ProjectsRpc.listPermissioned, { caller: invitee.caller })).toEqual([]);

    await reply(invitee, id, { isAccepted: true });
    expect(await h.client.call(ProjectsRpc.pendingInvitations, { userId: invitee.user.id })).toEqual([]);
    expect(await h.client.call(ProjectsRpc.listPermissioned, { caller: invitee.caller })).toEqual([project]);
    await expectAppError(reply(invitee, id, { isAccepted: true }), "not_found", "INVITATION_NOT_FOUND");
    // Now a member (Editor): may update, may not invite.
    await h.client.call(ProjectsRpc.updateMarkdown, {
      caller: invitee.caller,
      id,
      markDown: "by the editor",
    });
    await expectAppError(
      invite(invitee, id, { username: (await seed(h)).user.username }),
      "forbidden",
      "PROJECT_NOT_MEMBER",
    );
  });

  it("decline removes the invitation; refusals: self, unknown user, existing membership, bad role, non-manager, missing project", async () => {
    const { owner, id } = await team();
    const invitee = await seed(h);
    await invite(owner, id, { username: invitee.user.username, role: "Co-Owner" });
    await expectAppError(
      invite(owner, id, { username: invitee.user.username }),
      "conflict",
      "INVITATION_EXISTS",
    );
    await reply(invitee, id, { isAccepted: false });
    expect(await h.client.call(ProjectsRpc.pendingInvitations, { userId: invitee.user.id })).toEqual([]);

    await expectAppError(
      invite(owner, id, { username: owner.user.username }),
      "validation",
      "USER_SELF_ACTION",
    );
    await expectAppError(invite(owner, id, { username: "nobody_here" }), "not_found", "USER_NOT_FOUND");
    await expectAppError(
      invite(owner, id, { username: invitee.user.username, role: "Owner" }),
      "validation",
      "VALIDATION_FAILED",
    );
    await expectAppError(invite(owner, id), "validation", "VALIDATION_FAILED");
    const admin = await seed(h, "Admin");
    await expectAppError(
      invite(admin, id, { username: invitee.user.username }),
      "forbidden",
      "PROJECT_NOT_MEMBER",
    );
    await expectAppError(
      invite(owner, 2_000_000_000, { username: invitee.user.username }),
      "not_found",
      "PROJECT_NOT_FOUND",
    );
    await expectAppError(reply(invitee, id, { isAccepted: true }), "not_found", "INVITATION_NOT_FOUND");
  });

  it("an accepted Co-Owner invites too", async () => {
    const { owner, id } = await team();
    const coOwner = await seed(h);
    await join(id, owner, coOwner, "Co-Owner");
    const editor = await seed(h);
    await join(id, coOwner, editor, "Editor");
    const { rows } = await h.sql.query(
      `select user_id, role, is_accepted from projects.permission where project_id = $1 order by id`,
      [id],
    );
    expect(rows).toEqual([
      { user_id: owner.user.id, role: "Owner", is_accepted: true },
      { user_id: coOwner.user.id, role: "Co-Owner", is_accepted: true },
      { user_id: editor.user.id, role: "Editor", is_accepted: true },
    ]);
  });
});

describe("coOwners", () => {
  it("the accepted Owner and Co-Owners as UserDTOs, for members and Admin", async () => {
    const { owner, id } = await team();
    const coOwner = await seed(h);
    const editor = await seed(h);
    const pendingCoOwner = await seed(h);
    await join(id, owner, coOwner, "Co-Owner");
    await join(id, owner, editor, "Editor");
    await invite(owner, id, { username: pendingCoOwner.user.username, role: "Co-Owner" });
    const list = await h.client.call(ProjectsRpc.coOwners, {
      caller: (await seed(h, "Admin")).caller,
      projectID: id,
    });
    expect(list).toEqual([
      expect.objectContaining({
        id: owner.user.id,
        username: owner.user.username,
        address: owner.user.address,
        mailAddress: owner.user.mailAddress,
        invitations: null,
      }),
      expect.objectContaining({
        id: coOwner.user.id,
        username: coOwner.user.username,
        mailAddress: coOwner.user.mailAddress,
      }),
    ]);
    // E-mails only to an Admin and on the caller's own row (rules.md §8.10); the rest as the Admin sees it.
    const hidden = (row: unknown) => ({ ...(row as object), mailAddress: null });
    expect(await h.client.call(ProjectsRpc.coOwners, { caller: editor.caller, projectID: id })).toEqual(
      list.map(hidden),
    );
    expect(await h.client.call(ProjectsRpc.coOwners, { caller: coOwner.caller, projectID: id })).toEqual([
      hidden(list[0]),
      list[1],
    ]);
    await expectAppError(
      h.client.call(ProjectsRpc.coOwners, { caller: (await seed(h, "Viewer")).caller, projectID: id }),
      "forbidden",
      "PROJECT_NOT_MEMBER",
    );
    await expectAppError(
      h.client.call(ProjectsRpc.coOwners, { caller: (await seed(h)).caller, projectID: id }),
      "not_found",
      "PROJECT_NOT_FOUND",
    );
  });
});

describe("removeCollaborator", () => {
  it("the rules of rules.md §3", async () => {
    const { owner, id } = await team();
    const coOwner = await seed(h);
    const coOwner2 = await seed(h);
    const editor = await seed(h);
    const editor2 = await seed(h);
    const invited = await seed(h);
    await join(id, owner, coOwner, "Co-Owner");
    await join(id, owner, coOwner2, "Co-Owner");
    await join(id, owner, editor, "Editor");
    await join(id, owner, editor2, "Editor");
    await invite(owner, id, { username: invited.user.username });
    const remove = (by: Seeded, who?: Seeded) =>
      h.client.call(ProjectsRpc.removeCollaborator, {
        caller: by.caller,
        request: request(id, who ? { username: who.user.username } : {}),
      });

    await expectAppError(remove(owner), "conflict", "MEMBERSHIP_OWNER"); // the Owner cannot leave
    await expectAppError(remove(coOwner, owner), "conflict", "MEMBERSHIP_OWNER"); // nobody removes the Owner
    await expectAppError(remove(editor, editor2), "forbidden", "PROJECT_NOT_MEMBER"); // an Editor removes nobody
    await expectAppError(remove(coOwner, coOwner2), "forbidden", "PROJECT_NOT_MEMBER"); // only the Owner removes a Co-Owner
    expect(await remove(coOwner, invited)).toBeNull(); // a Co-Owner removes a pending invitation
    expect(await h.client.call(ProjectsRpc.pendingInvitations, { userId: invited.user.id })).toEqual([]);
    expect(await remove(coOwner, editor2)).toBeNull(); // ... and an Editor
    expect(await remove(editor)).toBeNull(); // anyone leaves
    expect(await remove(owner, coOwner2)).toBeNull(); // the Owner removes a Co-Owner
    await expectAppError(remove(owner, editor), "not_found", "MEMBERSHIP_NOT_FOUND");
    await expectAppError(
      h.client.call(ProjectsRpc.removeCollaborator, {
        caller: owner.caller,
        request: request(id, { username: "nobody_here" }),
      }),
      "not_found",
      "USER_NOT_FOUND",
    );
    // A Co-Owner may not leave once the auction is created.
    await setReview(h, id, { isAuctionCreated: true });
    await expectAppError(remove(coOwner), "conflict", "PROJECT_AUCTION_EXISTS");
    const { rows } = await h.sql.query(
      `select user_id from projects.permission where project_id = $1 order by id`,
      [id],
    );
    expect(rows.map((r) => r.user_id)).toEqual([owner.user.id, coOwner.user.id]);
  });
});

describe("a deleted user (users.user.deleted)", () => {
  it("loses memberships, invitations and ratings; the ratings left are recomputed", async () => {
    const { owner, id } = await team();
    await setReview(h, id, { viewerAccepted: true, status: "Approved" });
    const member = await seed(h);
    const invitedElsewhere = await team();
    await join(id, owner, member, "Editor");
    await invite(invitedElsewhere.owner, invitedElsewhere.id, { username: member.user.username });
    await h.client.call(ProjectsRpc.rate, { caller: member.caller, id, rating: 5 });
    expect((await h.client.call(ProjectsRpc.rate, { caller: owner.caller, id, rating: 1 })).rating).toBe(3);

    await h.client.call(UsersRpc.deleteSelf, { caller: member.caller });
    await expect
      .poll(async () => (await h.client.call(ProjectsRpc.get, { caller: null, id })).rating, {
        timeout: 10_000,
      })
      .toBe(1);
    const { rows } = await h.sql.query(
      `select (select count(*) from projects.permission where user_id = $1)::int as p,
              (select count(*) from projects.rating where user_id = $1)::int as r`,
      [member.user.id],
    );
    expect(rows[0]).toEqual({ p: 0, r: 0 });
  });
});
