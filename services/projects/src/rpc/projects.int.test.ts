import { kuboDirectoryCidOf } from "@fundraise/ipfs-node";
import { type Caller, ProjectsEvents, ProjectsRpc } from "@fundraise/protocol";
import { beforeAll, describe, expect, it } from "vitest";
import {
  addProject,
  expectAppError,
  isPinned,
  outboxPayloads,
  readWhitepaper,
  receivedEvent,
  seed,
  setReview,
  uniqueBytes,
  uniqueProjectName,
  updateProject,
  useHarness,
} from "../test/harness.ts";

// The project use cases over RabbitMQ as the gateway calls them, with the real storage service on the
// Kubo-RPC stand-in (packages/ipfs-node, not Kubo) and the real users service.
const h = useHarness("projects", { REVIEW_QUEUE_MAX: "1000" });

describe("projects.project.add", () => {
  it("stores the content through the storage service and makes the caller the accepted Owner", async () => {
    const { caller } = await seed(h);
    const file = new TextEncoder().encode("hello world\n");
    const image = uniqueBytes(32);
    const name = uniqueProjectName();
    const dto = await addProject(h, caller, { projectName: `  ${name} `, file, image, markDown: "# Hi" });
    expect(dto).toMatchObject({
      projectName: name,
      status: "Pending",
      viewerAccepted: false,
      viewerAcceptedAddress: null,
      rating: 0,
      proposerAddress: caller.address,
      isAuctionCreated: false,
      isAuctionStarted: false,
      auctionStatus: null,
      projectDescription: "A description",
      markDown: "# Hi",
    });
    expect(dto.fileHash).toMatch(/^[0-9A-F]{64}$/);
    expect(dto.imageUrl).toMatch(/^\/ipfs\/Qm[1-9A-HJ-NP-Za-km-z]{44}\/image$/);
    expect(new Date(dto.date as string).toISOString()).toBe(dto.date);
    expect(await isPinned(h, dto.fileHash)).toBe(true);
    const read = await readWhitepaper(h.ipfsUrl, dto.fileHash);
    expect(read.toString()).toBe("hello world\n");
    const { rows } = await h.sql.query(
      `select user_id, role, is_accepted from projects.permission where project_id = $1`,
      [dto.projectID],
    );
    expect(rows).toEqual([{ user_id: caller.userId, role: "Owner", is_accepted: true }]);
    expect(await outboxPayloads(h.sql, ProjectsEvents.created)).toContainEqual({
      projectId: dto.projectID,
      fileHash: dto.fileHash,
      ownerId: caller.userId,
      projectName: name,
    });
    await receivedEvent(h, ProjectsEvents.created, { projectId: dto.projectID });
  });

  it("409 PROJECT_NAME_TAKEN for a name taken in any case, before anything is uploaded", async () => {
    const { caller } = await seed(h);
    const first = await addProject(h, caller);
    const file = uniqueBytes();
    await expectAppError(
      addProject(h, caller, { projectName: first.projectName.toUpperCase(), file }),
      "conflict",
      "PROJECT_NAME_TAKEN",
    );
    const { rows } = await h.sql.query(
      `select count(*)::int as n from storage.pin where file_bytes = $1 and reason = 'project:add' and pinned_at > now() - interval '5 seconds' and file_hash not in (select file_hash from projects.project)`,
      [file.length],
    );
    expect(rows[0].n).toBe(0);
  });

  it("409 PROJECT_FILE_TAKEN for the same file and image, and the existing project keeps its content", async () => {
    const { caller } = await seed(h);
    const file = uniqueBytes();
    const first = await addProject(h, caller, { file });
    await expectAppError(addProject(h, caller, { file }), "conflict", "PROJECT_FILE_TAKEN");
    expect(await isPinned(h, first.fileHash)).toBe(true);
    // Another image is another directory: not the same content.
    const other = await addProject(h, caller, { file, image: uniqueBytes() });
    expect(other.fileHash).not.toBe(first.fileHash);
  });

  it("400 without a file, for a blank or too long name, or a refused name character; 403 for Blacklist", async () => {
    const { caller } = await seed(h);
    await expectAppError(addProject(h, caller, { file: null }), "validation", "VALIDATION_FAILED");
    await expectAppError(addProject(h, caller, { projectName: "   " }), "validation", "VALIDATION_FAILED");
    await expectAppError(
      addProject(h, caller, { projectName: "a\u202Eb" }),
      "validation",
      "VALIDATION_FAILED",
    );
    await expectAppError(
      addProject(h, caller, { markDown: "x".repeat(200_001) }),
      "validation",
      "VALIDATION_FAILED",
    );
    const { caller: blacklisted } = await seed(h, "Blacklist");
    await expectAppError(addProject(h, blacklisted), "forbidden", "ROLE_FORBIDDEN");
  });

  it("content the node does not have is the storage service's 404, and nothing is written", async () => {
    const { caller } = await seed(h);
    const name = uniqueProjectName();
    const missing = await kuboDirectoryCidOf({ whitepaper: uniqueBytes() });
    await expectAppError(
      h.client.call(ProjectsRpc.add, {
        caller,
        project: {
          projectName: name,
          projectDescription: null,
          markDown: null,
          content: { cid: missing.toString(), fileBytes: 64, imageBytes: null },
        },
      }),
      "not_found",
      "CONTENT_NOT_FOUND",
    );
    const { rows } = await h.sql.query(`select 1 from projects.project where name = $1`, [name]);
    expect(rows).toEqual([]);
  });
});

describe("visibility (behaviour.md §4)", () => {
  let owner: Awaited<ReturnType<typeof seed>>;
  let pending: number;
  let accepted: number;
  let approved: number;
  beforeAll(async () => {
    owner = await seed(h);
    pending = (await addProject(h, owner.caller)).projectID;
    accepted = (await addProject(h, owner.caller)).projectID;
    approved = (await addProject(h, owner.caller)).projectID;
    await setReview(h, accepted, { viewerAccepted: true });
    await setReview(h, approved, { viewerAccepted: true, status: "Approved" });
  });
  const idsOf = (list: { projectID: number }[]) =>
    list.map((p) => p.projectID).filter((id) => [pending, accepted, approved].includes(id));

  it("Admin and Viewer see all; members their own; Whitelist viewer-accepted; others viewer-accepted and Approved", async () => {
    const cases: [string, Parameters<typeof seed>[1] | null, number[]][] = [
      ["Admin", "Admin", [pending, accepted, approved]],
      ["Viewer", "Viewer", [pending, accepted, approved]],
      ["Whitelist", "Whitelist", [accepted, approved]],
      ["Base", "Base", [approved]],
      ["Blacklist", "Blacklist", [approved]],
      ["anonymous", null, [approved]],
    ];
    for (const [label, role, expected] of cases) {
      const caller = role ? (await seed(h, role)).caller : null;
      expect(idsOf(await h.client.call(ProjectsRpc.list, { caller })), label).toEqual(expected);
      expect(idsOf(await h.client.call(ProjectsRpc.top, { caller, count: 100 })).sort(), label).toEqual(
        [...expected].sort(),
      );
      for (const id of [pending, accepted, approved]) {
        const call = h.client.call(ProjectsRpc.get, { caller, id });
        if (expected.includes(id)) expect((await call).projectID, `${label} ${id}`).toBe(id);
        else await expectAppError(call, "not_found", "PROJECT_NOT_FOUND");
      }
    }
    expect(idsOf(await h.client.call(ProjectsRpc.list, { caller: owner.caller }))).toEqual([
      pending,
      accepted,
      approved,
    ]);
  });

  it("the hot lists (anonymous, cached in memory) never lag a committed change: review, rating, delete", async () => {
    const anonymousIds = async () => ({
      list: (await h.client.call(ProjectsRpc.list, { caller: null })).map((p) => p.projectID),
      top: (await h.client.call(ProjectsRpc.top, { caller: null, count: 100 })).map((p) => p.projectID),
      approved: (await h.client.call(ProjectsRpc.byStatus, { caller: null, status: "Approved" })).map(
        (p) => p.projectID,
      ),
    });
    const { caller } = await seed(h);
    const id = (await addProject(h, caller)).projectID;
    const before = await anonymousIds();
    expect(before.list).not.toContain(id);
    expect(await anonymousIds()).toEqual(before); // read again: from memory, still right
    // Another instance (here: straight SQL) approves it: the next read has it.
    await setReview(h, id, { viewerAccepted: true, status: "Approved" });
    const after = await anonymousIds();
    for (const ids of Object.values(after)) expect(ids).toContain(id);
    // The caller's own rating moves it to the top of the next top list.
    await h.client.call(ProjectsRpc.rate, { caller, id, rating: 5 });
    const [first] = await h.client.call(ProjectsRpc.top, { caller: null, count: 1 });
    expect(first).toMatchObject({ projectID: id, rating: 5 });
    await h.client.call(ProjectsRpc.delete, { caller, id });
    for (const ids of Object.values(await anonymousIds())) expect(ids).not.toContain(id);
  });

  it("byStatus filters the visible ones; a missing id is 404", async () => {
    const anonymous = await h.client.call(ProjectsRpc.byStatus, { caller: null, status: "Pending" });
    expect(idsOf(anonymous)).toEqual([]);
    const admin = (await seed(h, "Admin")).caller;
    expect(idsOf(await h.client.call(ProjectsRpc.byStatus, { caller: admin, status: "Pending" }))).toEqual([
      pending,
      accepted,
    ]);
    expect(idsOf(await h.client.call(ProjectsRpc.byStatus, { caller: admin, status: "Approved" }))).toEqual([
      approved,
    ]);
    await expectAppError(
      h.client.call(ProjectsRpc.get, { caller: admin, id: 2_000_000_000 }),
      "not_found",
      "PROJECT_NOT_FOUND",
    );
  });
});

describe("projects.project.top", () => {
  it("rating descending, ties newest first; n ≤ 0 empty; capped at 100", async () => {
    const admin = (await seed(h, "Admin")).caller;
    expect(await h.client.call(ProjectsRpc.top, { caller: admin, count: 0 })).toEqual([]);
    expect(await h.client.call(ProjectsRpc.top, { caller: admin, count: -3 })).toEqual([]);
    const { caller } = await seed(h);
    const a = (await addProject(h, caller)).projectID;
    const b = (await addProject(h, caller)).projectID;
    const c = (await addProject(h, caller)).projectID;
    await h.sql.query(`update projects.project set rating = 4.9 where id = any($1)`, [[a, c]]);
    await h.sql.query(`update projects.project set rating = 4.95 where id = $1`, [b]);
    const top = await h.client.call(ProjectsRpc.top, { caller: admin, count: 3 });
    expect(top.map((p) => p.projectID)).toEqual([b, c, a]);
    await h.sql.query(`update projects.project set rating = 0 where id = any($1)`, [[a, b, c]]);
    const { rows } = await h.sql.query(`select count(*)::int as n from projects.project`);
    const all = await h.client.call(ProjectsRpc.top, { caller: admin, count: 1_000_000 });
    expect(all.length).toBe(Math.min(100, rows[0].n));
  });
});

describe("projects.project.hashes and the viewer queue", () => {
  it("heldContent answers which of the given contents a project holds (storage's orphan check)", async () => {
    const dto = await addProject(h, (await seed(h)).caller);
    const stranger = "AB".repeat(32);
    expect(await h.client.call(ProjectsRpc.heldContent, { fileHashes: [stranger, dto.fileHash] })).toEqual([
      dto.fileHash,
    ]);
    expect(await h.client.call(ProjectsRpc.heldContent, { fileHashes: [] })).toEqual([]);
  });

  it("started auctions for anyone signed in; all hashes for Admin only", async () => {
    const { caller } = await seed(h);
    const dto = await addProject(h, caller);
    await h.sql.query(`update projects.project set is_auction_started = true where id = $1`, [dto.projectID]);
    expect(await h.client.call(ProjectsRpc.hashes, { caller, onlyAuctionsStarted: true })).toContain(
      dto.fileHash,
    );
    await expectAppError(
      h.client.call(ProjectsRpc.hashes, { caller, onlyAuctionsStarted: false }),
      "forbidden",
      "ROLE_FORBIDDEN",
    );
    const admin = (await seed(h, "Admin")).caller;
    const all = await h.client.call(ProjectsRpc.hashes, { caller: admin, onlyAuctionsStarted: false });
    expect(all).toContain(dto.fileHash);
    expect(all.length).toBeGreaterThan(
      (await h.client.call(ProjectsRpc.hashes, { caller, onlyAuctionsStarted: true })).length,
    );
  });

  it("viewerReply true accepts with the viewer's address; false removes the proposal and unpins it", async () => {
    const { caller } = await seed(h);
    const viewer = (await seed(h, "Viewer")).caller;
    const one = await addProject(h, caller);
    const two = await addProject(h, caller);
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
    expect(await isPinned(h, two.fileHash)).toBe(false);
    await receivedEvent(h, ProjectsEvents.deleted, { projectId: two.projectID, fileHash: two.fileHash });
  });
});

describe("projects.project.update and update-markdown", () => {
  it("any accepted member; 404 before 403; name uniqueness; a new file replaces the content", async () => {
    const owner = await seed(h);
    const dto = await addProject(h, owner.caller);
    const other = await addProject(h, owner.caller);
    const stranger = (await seed(h, "Admin")).caller;
    const update = (caller: Caller, id: number, extra: Partial<Parameters<typeof updateProject>[2]> = {}) =>
      updateProject(h, caller, { projectID: id, projectName: dto.projectName, ...extra });
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
    expect(await isPinned(h, dto.fileHash)).toBe(false);

    // Another project's content: 409, and that content stays.
    await expectAppError(
      update(owner.caller, other.projectID, { projectName: other.projectName, file }),
      "conflict",
      "PROJECT_FILE_TAKEN",
    );
    expect(await isPinned(h, replaced.fileHash)).toBe(true);

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
    // Refused before the upload was finished: nothing of it was pinned or recorded.
    const { rows } = await h.sql.query(`select 1 from storage.pin where reason like $1`, [
      `project:${dto.projectID}:update%`,
    ]);
    expect(rows).toHaveLength(1); // the replacement that stood
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
  it("Owner or Admin; 409 once an auction is created; content unpinned; deleted emitted", async () => {
    const owner = await seed(h);
    const dto = await addProject(h, owner.caller);
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
    expect(await isPinned(h, dto.fileHash)).toBe(false);
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
    // Still hidden from Blacklist (not Approved): 404 before 403 (behaviour.md §8).
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
