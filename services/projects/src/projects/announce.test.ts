import { testMessageContext } from "@fundraise/bus/testing";
import { describe, expect, it } from "vitest";
import { evaluated, projectsOnMemory, projectWrite } from "../test/memory-projects.ts";

// Every change a live stream shows (the gateway's GET /events) is announced in its transaction, with who
// saw the project before it: on the in-memory repository, as the rules' other use-case tests.
// (The content events are for the storage service: project.service.test.ts.)

const ctx = () => testMessageContext();
const changes = (h: ReturnType<typeof projectsOnMemory>) =>
  h.projects.events
    .filter((e) => e.name.startsWith("projects.") && !e.name.startsWith("projects.content."))
    .map((e) => e.payload);

describe("announcements of project changes", () => {
  it("each use case announces its change once, with the audience before it", async () => {
    const h = projectsOnMemory();
    const owner = h.person();
    const editor = h.person();
    const { projectID: id, fileHash } = await h.service.add(
      owner,
      projectWrite("Live", { file: "live" }),
      ctx(),
    );
    const pending = { viewerAccepted: false, status: "Pending" };

    await h.memberships.invite(owner, { projectID: id, username: editor.username }, ctx());
    await h.memberships.reply(editor, { projectID: id, isAccepted: true }, ctx());
    await h.service.viewerReply(h.person("Viewer"), id, true, ctx());
    await h.chain.applyEvaluation(evaluated(fileHash, true, 12), ctx());
    // The same fact again changes nothing and announces nothing.
    await h.chain.applyEvaluation(evaluated(fileHash, true, 12), ctx());
    await h.service.rate(editor, id, 4, ctx());
    await h.service.updateMarkdown(editor, id, "# Now", ctx());

    const members = [owner.userId, editor.userId];
    expect(changes(h)).toEqual([
      expect.objectContaining({ projectId: id, fileHash }),
      { projectId: id, change: "created", before: null },
      { projectId: id, change: "members", before: { ...pending, memberIds: [owner.userId] } },
      {
        change: "created",
        invitation: expect.objectContaining({ projectID: id, userID: editor.userId, isAccepted: false }),
      },
      // Accepting changes nobody's view: only the invitee hears of it.
      {
        change: "accepted",
        invitation: expect.objectContaining({ userID: editor.userId, isAccepted: true }),
      },
      { projectId: id, change: "viewer-accepted", before: { ...pending, memberIds: members } },
      {
        projectId: id,
        change: "status",
        before: { viewerAccepted: true, status: "Pending", memberIds: members },
        indexedBlock: 12,
      },
      {
        projectId: id,
        change: "rated",
        before: { viewerAccepted: true, status: "Approved", memberIds: members },
      },
      {
        projectId: id,
        change: "updated",
        before: { viewerAccepted: true, status: "Approved", memberIds: members },
      },
    ]);
  });

  it("a declined or removed invitation is withdrawn, and the project may leave the invitee's view", async () => {
    const h = projectsOnMemory();
    const owner = h.person();
    const invitee = h.person();
    const { projectID: id } = await h.service.add(owner, projectWrite("Declined", { file: "d" }), ctx());
    await h.memberships.invite(owner, { projectID: id, username: invitee.username }, ctx());
    await h.memberships.reply(invitee, { projectID: id, isAccepted: false }, ctx());
    await h.memberships.invite(owner, { projectID: id, username: invitee.username }, ctx());
    await h.memberships.removeCollaborator(owner, { projectID: id, username: invitee.username }, ctx());

    const withInvitee = {
      viewerAccepted: false,
      status: "Pending",
      memberIds: [owner.userId, invitee.userId],
    };
    const invited = expect.objectContaining({ userID: invitee.userId, isAccepted: false });
    const gone = [
      { projectId: id, change: "members", before: withInvitee },
      { change: "withdrawn", invitation: invited },
    ];
    const made = [expect.objectContaining({ change: "members" }), { change: "created", invitation: invited }];
    // After the Add: invited, declined, invited again, removed.
    expect(changes(h).slice(2)).toEqual([...made, ...gone, ...made, ...gone]);
  });

  it("a bid announces auction activity from its block; a fact for no project announces nothing", async () => {
    const h = projectsOnMemory();
    const owner = h.person();
    const { projectID: id, fileHash } = await h.service.add(owner, projectWrite("Bid", { file: "b" }), ctx());
    const bid = (projectHash: string, block: number) => ({
      ...evaluated(fileHash, true, block),
      projectHash,
      auction: "0x00000000000000000000000000000000000000aa",
      sender: owner.address,
      amount: "5",
    });
    const before = h.projects.events.length;
    await h.chain.applyAuctionActivity(bid(`0x${"0".repeat(64)}`, 20), ctx());
    await h.chain.applyAuctionActivity(bid(`0x${fileHash.toLowerCase()}`, 21), ctx());
    await h.chain.applyAuctionActivity(bid(`0x${fileHash.toLowerCase()}`, 21), ctx());
    expect(h.projects.events.slice(before).map((e) => e.payload)).toEqual([
      expect.objectContaining({ projectId: id, change: "auction", indexedBlock: 21 }),
    ]);
  });
});
