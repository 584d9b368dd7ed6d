import { kuboDirectoryCidOf } from "@fundraise/ipfs-node";
import { ProjectsEvents, ProjectsRpc } from "@fundraise/protocol";
import { beforeAll, describe, expect, it } from "vitest";
import {
  addProject,
  asGateway,
  expectAppError,
  fileHashOfContent,
  isPinned,
  isRecorded,
  outboxPayloads,
  readWhitepaper,
  receivedEvent,
  seed,
  setReview,
  uniqueBytes,
  uniqueProjectName,
  useHarness,
} from "../test/harness.ts";

// The project use cases over RabbitMQ as the gateway calls them (its content added pinned first), with the
// real storage service on the Kubo-RPC stand-in (packages/ipfs-node, not Kubo) and the real users service.
// The writes that let content go (viewer rejection, a new file, delete) are project-writes.int.test.ts'.
const h = useHarness("projects", { REVIEW_QUEUE_MAX: "1000" });

describe("projects.project.add", () => {
  it("answers the project; its content pinned by the add and recorded from content.taken; the caller the accepted Owner", async () => {
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
    // The content is the gateway's pinned add; the project's write announced it for the inventory.
    expect(await isPinned(h, dto.fileHash)).toBe(true);
    expect((await readWhitepaper(h.ipfsUrl, dto.fileHash)).toString()).toBe("hello world\n");
    const cid = (dto.imageUrl as string).split("/")[2];
    expect(await outboxPayloads(h.sql, ProjectsEvents.contentTaken)).toContainEqual({
      projectId: dto.projectID,
      fileHash: dto.fileHash,
      cid,
      fileBytes: file.length,
      imageBytes: 32,
      reason: "project:add",
    });
    await expect.poll(() => isRecorded(h, dto.fileHash), { timeout: 15_000 }).toBe(true);
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

  it("409 PROJECT_NAME_TAKEN for a name taken in any case; the refused content is not taken", async () => {
    const { caller } = await seed(h);
    const first = await addProject(h, caller);
    const file = uniqueBytes();
    await expectAppError(
      addProject(h, caller, { projectName: first.projectName.toUpperCase(), file }),
      "conflict",
      "PROJECT_NAME_TAKEN",
    );
    const refused = await fileHashOfContent(file);
    const taken = await outboxPayloads(h.sql, ProjectsEvents.contentTaken);
    expect(taken.filter((e) => e.fileHash === refused)).toEqual([]);
  });

  it("409 PROJECT_FILE_TAKEN for the same file and image; the gateway's release of it is held: it stays pinned", async () => {
    const { caller } = await seed(h);
    const file = uniqueBytes();
    const first = await addProject(h, caller, { file });
    await expectAppError(addProject(h, caller, { file }, asGateway), "conflict", "PROJECT_FILE_TAKEN");
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

  it("content the node lacks: the write commits (projects never asks the node); storage's round reports it missing", async () => {
    const { caller } = await seed(h);
    // The gateway always added the content; a node that lost it since is the reconciliation's (part c).
    const lost = await kuboDirectoryCidOf({ whitepaper: uniqueBytes() });
    const dto = await h.client.call(ProjectsRpc.add, {
      caller,
      project: {
        projectName: uniqueProjectName(),
        projectDescription: null,
        markDown: null,
        content: { cid: lost.toString(), fileBytes: 64, imageBytes: null },
      },
    });
    await expect.poll(() => isRecorded(h, dto.fileHash), { timeout: 15_000 }).toBe(true);
    const round = await h.storage.reconcile();
    expect(round.missing).toBeGreaterThanOrEqual(1);
    // Not pinned again (the node cannot find it), and never released: a project holds it.
    expect(await isPinned(h, dto.fileHash)).toBe(false);
    expect(await isRecorded(h, dto.fileHash)).toBe(true);
    await h.client.call(ProjectsRpc.delete, { caller, id: dto.projectID });
  });
});

describe("visibility (rules.md §4.2)", () => {
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

describe("projects.project.hashes and content.held", () => {
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
});
