import { testMessageContext } from "@fundraise/bus/testing";
import type { Caller } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import { projectsOnMemory, projectWrite } from "../test/memory-projects.ts";
import { removalRefusal } from "./membership.service.ts";
import type { Permission } from "./project.entity.ts";

const ctx = () => testMessageContext();

/** A project of its own Owner, on memory. */
async function team() {
  const h = projectsOnMemory();
  const owner = h.person();
  const { projectID: id } = await h.service.add(
    owner,
    projectWrite(`Team ${Math.random()}`, { file: "team" }),
    ctx(),
  );
  const join = async (caller: Caller, role: "Editor" | "Co-Owner" = "Editor") => {
    await h.memberships.invite(owner, { projectID: id, username: caller.username, role }, ctx());
    await h.memberships.reply(caller, { projectID: id, isAccepted: true }, ctx());
  };
  return { h, owner, id, join };
}

describe("invitations (rules.md §3.5, §3.6)", () => {
  it("the Owner or a Co-Owner invites by username (any case); the invitee accepts and is a member", async () => {
    const { h, owner, id, join } = await team();
    const coOwner = h.person();
    await join(coOwner, "Co-Owner");
    const invitee = h.person();
    const invitation = await h.memberships.invite(
      coOwner,
      { projectID: id, username: invitee.username.toUpperCase() },
      ctx(),
    );
    expect(await h.memberships.pendingInvitations(invitee.userId)).toEqual([
      { id: Number(invitation), projectID: id, userID: invitee.userId, role: "Editor", isAccepted: false },
    ]);
    expect((await h.service.listInvited(invitee)).map((p) => p.projectID)).toEqual([id]);
    await h.memberships.reply(invitee, { projectID: id, isAccepted: true }, ctx());
    expect((await h.service.listPermissioned(invitee)).map((p) => p.projectID)).toEqual([id]);
    await expect(
      h.memberships.reply(invitee, { projectID: id, isAccepted: true }, ctx()),
    ).rejects.toMatchObject({
      code: "INVITATION_NOT_FOUND",
    });
    expect(owner.userId).not.toBe(invitee.userId);
  });

  it("refuses an Editor's invitation, oneself, an unknown user, a second invitation and a role to invite that is none", async () => {
    const { h, owner, id, join } = await team();
    const editor = h.person();
    await join(editor);
    const invitee = h.person();
    await expect(
      h.memberships.invite(editor, { projectID: id, username: invitee.username }, ctx()),
    ).rejects.toMatchObject({
      code: "PROJECT_NOT_MEMBER",
    });
    await expect(
      h.memberships.invite(owner, { projectID: id, username: owner.username }, ctx()),
    ).rejects.toMatchObject({
      code: "USER_SELF_ACTION",
    });
    await expect(
      h.memberships.invite(owner, { projectID: id, username: "nobody" }, ctx()),
    ).rejects.toMatchObject({
      code: "USER_NOT_FOUND",
    });
    await expect(
      h.memberships.invite(owner, { projectID: id, username: invitee.username, role: "Owner" }, ctx()),
    ).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
    await h.memberships.invite(owner, { projectID: id, username: invitee.username }, ctx());
    await expect(
      h.memberships.invite(owner, { projectID: id, username: invitee.username }, ctx()),
    ).rejects.toMatchObject({
      code: "INVITATION_EXISTS",
    });
  });

  it("a username holding a NUL, control or invisible character is refused with 400, before anyone is looked up (rules.md §7.8)", async () => {
    const { h, owner, id } = await team();
    for (const username of ["a\u0000b", "\u0000", "ab\u200bc", "a\nb"]) {
      await expect(
        h.memberships.invite(owner, { projectID: id, username, role: "Editor" }, ctx()),
      ).rejects.toMatchObject({ code: "VALIDATION_FAILED", status: 400 });
      await expect(
        h.memberships.removeCollaborator(owner, { projectID: id, username }, ctx()),
      ).rejects.toMatchObject({ code: "VALIDATION_FAILED", status: 400 });
    }
  });

  it("Blacklist may decline an invitation and leave, not accept one (rules.md §8.1)", async () => {
    const { h, owner, id, join } = await team();
    const invitee = { ...h.person(), role: "Blacklist" as const };
    await h.memberships.invite(owner, { projectID: id, username: invitee.username }, ctx());
    await expect(
      h.memberships.reply(invitee, { projectID: id, isAccepted: true }, ctx()),
    ).rejects.toMatchObject({
      code: "ROLE_FORBIDDEN",
    });
    await h.memberships.reply(invitee, { projectID: id, isAccepted: false }, ctx());
    expect(await h.memberships.pendingInvitations(invitee.userId)).toEqual([]);
    const member = h.person();
    await join(member);
    await h.memberships.removeCollaborator({ ...member, role: "Blacklist" }, { projectID: id }, ctx());
    expect(await h.projects.permissionOf(id, member.userId)).toBeNull();
  });
});

describe("co-owners and removal", () => {
  it("co-owners to members and Admins; e-mails to an Admin and on one's own row only", async () => {
    const { h, owner, id, join } = await team();
    const coOwner = h.person();
    await join(coOwner, "Co-Owner");
    await expect(h.memberships.coOwners(h.person("Viewer"), id, ctx())).rejects.toMatchObject({
      code: "PROJECT_NOT_MEMBER",
    });
    const seenBy = async (caller: Caller) =>
      (await h.memberships.coOwners(caller, id, ctx())).map((u) => [u.id, u.mailAddress !== null]);
    expect(await seenBy(coOwner)).toEqual([
      [owner.userId, false],
      [coOwner.userId, true],
    ]);
    expect(await seenBy(h.person("Admin"))).toEqual([
      [owner.userId, true],
      [coOwner.userId, true],
    ]);
  });

  it("Owner and Co-Owners remove Editors; only the Owner removes a Co-Owner; the Owner never goes", async () => {
    const { h, owner, id, join } = await team();
    const [coOwner, editor, second] = [h.person(), h.person(), h.person()];
    await join(coOwner, "Co-Owner");
    await join(editor);
    await join(second, "Co-Owner");
    await h.memberships.removeCollaborator(coOwner, { projectID: id, username: editor.username }, ctx());
    await expect(
      h.memberships.removeCollaborator(coOwner, { projectID: id, username: second.username }, ctx()),
    ).rejects.toMatchObject({ code: "PROJECT_NOT_MEMBER" });
    await h.memberships.removeCollaborator(owner, { projectID: id, username: second.username }, ctx());
    await expect(h.memberships.removeCollaborator(owner, { projectID: id }, ctx())).rejects.toMatchObject({
      code: "MEMBERSHIP_OWNER",
    });
    expect([...h.projects.permissions.values()].map((p) => p.userId).sort()).toEqual(
      [owner.userId, coOwner.userId].sort(),
    );
  });
});

describe("removalRefusal", () => {
  const row = (role: string, isAccepted = true) => ({ role, isAccepted }) as Permission;
  it.each([
    ["Owner leaves", row("Owner"), row("Owner"), true, false, "MEMBERSHIP_OWNER"],
    ["Co-Owner removes the Owner", row("Co-Owner"), row("Owner"), false, false, "MEMBERSHIP_OWNER"],
    ["Editor leaves", row("Editor"), row("Editor"), true, true, null],
    [
      "Co-Owner leaves after the auction",
      row("Co-Owner"),
      row("Co-Owner"),
      true,
      true,
      "PROJECT_AUCTION_EXISTS",
    ],
    ["Co-Owner leaves before the auction", row("Co-Owner"), row("Co-Owner"), true, false, null],
    ["Co-Owner removes an Editor", row("Co-Owner"), row("Editor"), false, true, null],
    ["Co-Owner removes a pending Co-Owner", row("Co-Owner"), row("Co-Owner", false), false, false, null],
    ["Co-Owner removes a Co-Owner", row("Co-Owner"), row("Co-Owner"), false, false, "PROJECT_NOT_MEMBER"],
    ["Owner removes a Co-Owner", row("Owner"), row("Co-Owner"), false, true, null],
    ["Editor removes an Editor", row("Editor"), row("Editor"), false, false, "PROJECT_NOT_MEMBER"],
    [
      "pending Co-Owner removes an Editor",
      row("Co-Owner", false),
      row("Editor"),
      false,
      false,
      "PROJECT_NOT_MEMBER",
    ],
    ["a stranger removes an Editor", null, row("Editor"), false, false, "PROJECT_NOT_MEMBER"],
  ] as const)("%s", (_label, actor, target, self, auction, code) => {
    const refusal = removalRefusal(actor, target, self, auction);
    expect(refusal === null ? null : refusal.code).toBe(code);
  });
});
