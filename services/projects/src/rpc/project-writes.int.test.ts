import { type Caller, ProjectsEvents, ProjectsRpc } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import {
  addProject,
  asGateway,
  contentSettled,
  expectAppError,
  isPinned,
  isRecorded,
  outboxPayloads,
  receivedEvent,
  seed,
  setReview,
  uniqueBytes,
  updateProject,
  useHarness,
} from "../test/harness.ts";

// The project writes that let content go (a viewer's rejection, a new file, a deletion) and the rating, as
// the gateway calls them, with the real storage service on the Kubo-RPC stand-in (packages/ipfs-node, not
// Kubo) and the real users service. A write answers before its content is unpinned: storage unpins it once
// it consumed `projects.content.dropped`, so the tests wait for that (a condition, not a time).
const h = useHarness("project_writes", { REVIEW_QUEUE_MAX: "1000" });

/** A project whose content storage recorded already (`taken` handled), so its drop comes after it. */
async function recordedProject(caller: Caller) {
  const dto = await addProject(h, caller);
  await expect.poll(() => isRecorded(h, dto.fileHash), { timeout: 15_000 }).toBe(true);
  return dto;
}

/** Waits until storage let the content go for `reason`: unpinned on the node, its inventory row marked. */
async function expectLetGo(fileHash: string, reason: string) {
  const marked = async () =>
    (
      await h.sql.query(`select unpin_reason from storage.pin where file_hash = $1 order by id`, [fileHash])
    ).rows.map((r) => r.unpin_reason);
  await expect.poll(marked, { timeout: 20_000 }).toEqual([reason]);
  expect(await isPinned(h, fileHash)).toBe(false);
}

describe("projects.project.viewer-reply", () => {
  it("viewerReply true accepts with the viewer's address; false removes the proposal, storage unpins its content", async () => {
    const { caller } = await seed(h);
    const viewer = (await seed(h, "Viewer")).caller;
    const one = await addProject(h, caller);
    const two = await recordedProject(caller);
    const queue = await h.client.call(ProjectsRpc.viewerQueue, { caller: viewer });
    expect(queue.map((p) => p.projectID)).toEqual(expect.arrayContaining([one.projectID, two.projectID]));
    await expectAppError(h.client.call(ProjectsRpc.viewerQueue, { caller }), "forbidden", "ROLE_FORBIDDEN");
    await expectAppError(
      h.client.call(ProjectsRpc.viewerReply, { caller, id: one.projectID, reply: true }),
      "forbidden",
      "ROLE_FORBIDDEN",
    );

    const accepted = await h.client.call(ProjectsRpc.viewerReply, {
      caller: viewer,
      id: one.projectID,
      reply: true,
    });
    expect(accepted).toMatchObject({
      viewerAccepted: true,
      viewerAcceptedAddress: viewer.address,
      status: "Pending",
    });
    await expectAppError(
      h.client.call(ProjectsRpc.viewerReply, { caller: viewer, id: one.projectID, reply: false }),
      "conflict",
      "PROJECT_ALREADY_REVIEWED",
    );
    const queueAfter = await h.client.call(ProjectsRpc.viewerQueue, { caller: viewer });
    expect(queueAfter.map((p) => p.projectID)).not.toContain(one.projectID);

    const admin = (await seed(h, "Admin")).caller;
    expect(
      await h.client.call(ProjectsRpc.viewerReply, { caller: admin, id: two.projectID, reply: false }),
    ).toBeNull();
    await expectAppError(
      h.client.call(ProjectsRpc.get, { caller: admin, id: two.projectID }),
      "not_found",
      "PROJECT_NOT_FOUND",
    );
    await receivedEvent(h, ProjectsEvents.deleted, { projectId: two.projectID, fileHash: two.fileHash });
    await expectLetGo(two.fileHash, `project:${two.projectID}:rejected-by-viewer`);
    expect(await isPinned(h, one.fileHash)).toBe(true);
  });
});

describe("projects.project.update and update-markdown", () => {
  it("any accepted member; 404 before 403; name uniqueness; a new file replaces the content, the old one unpinned", async () => {
    const owner = await seed(h);
    const dto = await recordedProject(owner.caller);
    const other = await addProject(h, owner.caller);
    const stranger = (await seed(h, "Admin")).caller;
    type Extra = Partial<Parameters<typeof updateProject>[2]>;
    const update = (caller: Caller, id: number, extra: Extra = {}, send?: typeof asGateway) =>
      updateProject(h, caller, { projectID: id, projectName: dto.projectName, ...extra }, send);
    await expectAppError(update(stranger, 2_000_000_000), "not_found", "PROJECT_NOT_FOUND");
    await expectAppError(update(stranger, dto.projectID), "forbidden", "PROJECT_NOT_MEMBER");
    // A hidden project is 404 to a non-member Base user, not 403.
    await expectAppError(update((await seed(h)).caller, dto.projectID), "not_found", "PROJECT_NOT_FOUND");
    await expectAppError(
      update(owner.caller, dto.projectID, { projectName: other.projectName.toLowerCase() }),
      "conflict",
      "PROJECT_NAME_TAKEN",
    );
    const renamed = await update(owner.caller, dto.projectID, {
      projectName: `${dto.projectName} v2`,
      projectDescription: "new",
    });
    expect(renamed).toMatchObject({
      projectName: `${dto.projectName} v2`,
      projectDescription: "new",
      fileHash: dto.fileHash,
    });

    const file = uniqueBytes();
    const replaced = await update(owner.caller, dto.projectID, { projectName: renamed.projectName, file });
    expect(replaced.fileHash).not.toBe(dto.fileHash);
    expect(replaced.projectDescription).toBe("new");
    expect(await isPinned(h, replaced.fileHash)).toBe(true);
    await expect.poll(() => isRecorded(h, replaced.fileHash), { timeout: 15_000 }).toBe(true);
    await expectLetGo(dto.fileHash, `project:${dto.projectID}:replaced`);

    // Another project's content: 409, and that content stays (the gateway's release of it is held).
    await expectAppError(
      update(owner.caller, other.projectID, { projectName: other.projectName, file }, asGateway),
      "conflict",
      "PROJECT_FILE_TAKEN",
    );
    expect(await isPinned(h, replaced.fileHash)).toBe(true);
    expect(await isRecorded(h, replaced.fileHash)).toBe(true);

    // An image needs the file with it; once an auction exists the file is fixed.
    await expectAppError(
      update(owner.caller, dto.projectID, { projectName: renamed.projectName, image: uniqueBytes() }),
      "validation",
      "VALIDATION_FAILED",
    );
    await setReview(h, dto.projectID, { isAuctionCreated: true });
    await expectAppError(
      update(owner.caller, dto.projectID, { projectName: renamed.projectName, file: uniqueBytes() }),
      "conflict",
      "PROJECT_AUCTION_EXISTS",
    );
    // Only the replacement that stood was taken: a refused write's content never reaches the inventory.
    await contentSettled(h);
    const { rows } = await h.sql.query(`select 1 from storage.pin where reason like $1`, [
      `project:${dto.projectID}:update%`,
    ]);
    expect(rows).toHaveLength(1);
  });

  it("updateMarkdown: members only, the markdown as given", async () => {
    const owner = await seed(h);
    const dto = await addProject(h, owner.caller);
    const md = "# Title\n\nSome *text* / with ? and %";
    expect(
      (
        await h.client.call(ProjectsRpc.updateMarkdown, {
          caller: owner.caller,
          id: dto.projectID,
          markDown: md,
        })
      ).markDown,
    ).toBe(md);
    await expectAppError(
      h.client.call(ProjectsRpc.updateMarkdown, {
        caller: (await seed(h, "Viewer")).caller,
        id: dto.projectID,
        markDown: "x",
      }),
      "forbidden",
      "PROJECT_NOT_MEMBER",
    );
  });
});

describe("projects.project.delete", () => {
  it("Owner or Admin; 409 once an auction is created; deleted emitted; storage unpins the content", async () => {
    const owner = await seed(h);
    const dto = await recordedProject(owner.caller);
    const viewer = (await seed(h, "Viewer")).caller;
    await expectAppError(
      h.client.call(ProjectsRpc.delete, { caller: viewer, id: dto.projectID }),
      "forbidden",
      "PROJECT_NOT_MEMBER",
    );
    await setReview(h, dto.projectID, { isAuctionCreated: true });
    await expectAppError(
      h.client.call(ProjectsRpc.delete, { caller: owner.caller, id: dto.projectID }),
      "conflict",
      "PROJECT_AUCTION_EXISTS",
    );
    await setReview(h, dto.projectID, { isAuctionCreated: false });
    await h.client.call(ProjectsRpc.rate, { caller: viewer, id: dto.projectID, rating: 3 });
    expect(await h.client.call(ProjectsRpc.delete, { caller: owner.caller, id: dto.projectID })).toBeNull();
    // The deletion answers before the unpin: storage unpins once it consumed content.dropped.
    expect(await outboxPayloads(h.sql, ProjectsEvents.contentDropped)).toContainEqual({
      projectId: dto.projectID,
      fileHash: dto.fileHash,
      reason: `project:${dto.projectID}:deleted`,
    });
    await expectLetGo(dto.fileHash, `project:${dto.projectID}:deleted`);
    const { rows } = await h.sql.query(
      `select (select count(*) from projects.permission where project_id = $1)::int as p,
              (select count(*) from projects.rating where project_id = $1)::int as r`,
      [dto.projectID],
    );
    expect(rows[0]).toEqual({ p: 0, r: 0 });
    await receivedEvent(h, ProjectsEvents.deleted, { projectId: dto.projectID });

    const admin = (await seed(h, "Admin")).caller;
    const second = await addProject(h, owner.caller);
    await h.client.call(ProjectsRpc.delete, { caller: admin, id: second.projectID });
    await expectAppError(
      h.client.call(ProjectsRpc.delete, { caller: admin, id: second.projectID }),
      "not_found",
      "PROJECT_NOT_FOUND",
    );
  });
});

describe("projects.project.rate", () => {
  it("finite [0, 5]; one per user, replaced; the mean kept; Base only on Approved; never Blacklist", async () => {
    const owner = await seed(h);
    const dto = await addProject(h, owner.caller);
    const base = (await seed(h)).caller;
    const whitelist = (await seed(h, "Whitelist")).caller;
    for (const bad of [Number.NaN, -1, 5.0001, Number.POSITIVE_INFINITY]) {
      await expectAppError(
        h.client.call(ProjectsRpc.rate, { caller: whitelist, id: dto.projectID, rating: bad }),
        "validation",
        "VALIDATION_FAILED",
      );
    }
    // Hidden (not viewer-accepted) from Whitelist and Base: 404.
    await expectAppError(
      h.client.call(ProjectsRpc.rate, { caller: whitelist, id: dto.projectID, rating: 4 }),
      "not_found",
      "PROJECT_NOT_FOUND",
    );
    await setReview(h, dto.projectID, { viewerAccepted: true });
    // Still hidden from Blacklist (not Approved): 404 before 403 (rules.md §8.11).
    const blacklisted = (await seed(h, "Blacklist")).caller;
    await expectAppError(
      h.client.call(ProjectsRpc.rate, { caller: blacklisted, id: dto.projectID, rating: 4 }),
      "not_found",
      "PROJECT_NOT_FOUND",
    );
    await expectAppError(
      h.client.call(ProjectsRpc.rate, { caller: base, id: dto.projectID, rating: 4 }),
      "not_found",
      "PROJECT_NOT_FOUND",
    );
    expect(
      (await h.client.call(ProjectsRpc.rate, { caller: whitelist, id: dto.projectID, rating: 4 })).rating,
    ).toBe(4);
    const viewer = (await seed(h, "Viewer")).caller;
    expect(
      (await h.client.call(ProjectsRpc.rate, { caller: viewer, id: dto.projectID, rating: 0 })).rating,
    ).toBe(2);
    // A member with role Base rates its own (visible) project only once it is Approved.
    await expectAppError(
      h.client.call(ProjectsRpc.rate, { caller: owner.caller, id: dto.projectID, rating: 1 }),
      "forbidden",
      "ROLE_FORBIDDEN",
    );
    await setReview(h, dto.projectID, { status: "Approved" });
    // Visible to Blacklist now, and still refused: Blacklist is read-only.
    await expectAppError(
      h.client.call(ProjectsRpc.rate, { caller: blacklisted, id: dto.projectID, rating: 4 }),
      "forbidden",
      "ROLE_FORBIDDEN",
    );
    expect(
      (await h.client.call(ProjectsRpc.rate, { caller: base, id: dto.projectID, rating: 5 })).rating,
    ).toBe(3);
    // A new rating replaces the old one.
    expect(
      (await h.client.call(ProjectsRpc.rate, { caller: whitelist, id: dto.projectID, rating: 1 })).rating,
    ).toBe(2);
    const { rows } = await h.sql.query(
      `select count(*)::int as n from projects.rating where project_id = $1`,
      [dto.projectID],
    );
    expect(rows[0].n).toBe(3);
  });
});
