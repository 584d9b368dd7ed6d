import { testMessageContext } from "@fundraise/bus/testing";
import { describe, expect, it } from "vitest";
import { evaluated, projectsOnMemory, projectWrite } from "../test/memory-projects.ts";

// A user's deletion as the projects service takes part in it (docs/adr/0015-no-orphaned-projects.md),
// on memory; the locks that order it against concurrent writes are rpc/user-fence.int.test.ts'.

const ctx = () => testMessageContext();

describe("a user's deletion", () => {
  it("is refused while the user is an accepted Owner; afterwards the fenced user writes nothing", async () => {
    const h = projectsOnMemory();
    const owner = h.person();
    const member = h.person();
    const { projectID: id } = await h.service.add(owner, projectWrite("Kept", { file: "kept" }), ctx());
    await h.memberships.invite(owner, { projectID: id, username: member.username }, ctx());
    await h.memberships.reply(member, { projectID: id, isAccepted: true }, ctx());
    await expect(h.fences.fence(owner.userId, ctx())).rejects.toMatchObject({ code: "USER_OWNS_PROJECT" });
    await h.fences.fence(member.userId, ctx());
    await expect(h.service.updateMarkdown(member, id, "late", ctx())).rejects.toMatchObject({
      code: "TOKEN_REVOKED",
    });
    await expect(
      h.memberships.invite(owner, { projectID: id, username: member.username }, ctx()),
    ).rejects.toMatchObject({ code: "USER_NOT_FOUND" });
    // The deletion did not commit: the fence is lifted and the member writes again.
    await h.fences.unfence(member.userId, ctx());
    expect(await h.service.updateMarkdown(member, id, "back", ctx())).toMatchObject({ markDown: "back" });
  });

  it("once confirmed, removes the user's memberships, invitations and ratings; the ratings left are the mean", async () => {
    const h = projectsOnMemory();
    const owner = h.person();
    const { projectID: id, fileHash } = await h.service.add(
      owner,
      projectWrite("Rated", { file: "rated" }),
      ctx(),
    );
    await h.service.viewerReply(h.person("Viewer"), id, true, ctx());
    await h.chain.applyEvaluation(evaluated(fileHash, true), ctx());
    const [leaving, staying] = [h.person(), h.person()];
    await h.memberships.invite(owner, { projectID: id, username: leaving.username }, ctx());
    await h.service.rate(leaving, id, 1, ctx());
    await h.service.rate(staying, id, 5, ctx());
    expect((await h.service.get(null, id)).rating).toBe(3);
    await h.fences.removeUser(leaving.userId, ctx());
    expect((await h.service.get(null, id)).rating).toBe(5);
    expect(await h.projects.permissionOf(id, leaving.userId)).toBeNull();
    // Confirmed: an unfence (a late call of a failed attempt) no longer lifts it.
    await h.fences.unfence(leaving.userId, ctx());
    expect(await h.projects.isFenced(leaving.userId)).toBe(true);
  });
});
