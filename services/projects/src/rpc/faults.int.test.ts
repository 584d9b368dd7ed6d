import { fileHashOf } from "@fundraise/ipfs";
import { ErrorCode, isAppError, ProjectsEvents, ProjectsRpc } from "@fundraise/protocol";
import { ORPHAN_REASON, UNRECORDED_REASON } from "@fundraise/storage/src/content/reconcile.ts";
import { addContent } from "@fundraise/storage/src/test/harness.ts";
import { describe, expect, it } from "vitest";
import {
  addProject,
  asGateway,
  contentSettled,
  fileHashOfContent,
  isPinned,
  isRecorded,
  outboxPayloads,
  readWhitepaper,
  seed,
  uniqueBytes,
  uniqueProjectName,
  type updateProject,
  useHarness,
  whileRefusing,
} from "../test/harness.ts";

// Faults under the real projects, storage and users services, real Postgres and RabbitMQ; IPFS is OUR
// KUBO-RPC STAND-IN (packages/ipfs-node, not Kubo), stopped and restarted under the running services. The
// gateway adds content pinned before the write (ADR 0027); storage's sweep runs when a test calls it, its
// grace periods on a storage clock the test moves (ORPHAN_GRACE_MS cannot be set below 2 minutes).
const GRACE = 900_000; // ORPHAN_GRACE_MS's default
let ahead = 0;
const h = useHarness("faults", {}, { storageClock: () => Date.now() + ahead });

async function projectNamed(name: string) {
  const { rows } = await h.sql.query(`select id, file_hash from projects.project where name = $1`, [name]);
  return rows as { id: number; file_hash: string }[];
}

/** Storage's inventory rows of this content, oldest first. */
async function pinRowsOf(fileHash: string) {
  const { rows } = await h.sql.query<{ unpinned_at: Date | null; unpin_reason: string | null }>(
    `select unpinned_at, unpin_reason from storage.pin where file_hash = $1 order by id`,
    [fileHash],
  );
  return rows;
}

/** The reasons of the releases the projects service granted for this content, oldest first. */
async function releasesOf(fileHash: string) {
  const { rows } = await h.sql.query(
    `select reason from projects.content_release where file_hash = $1 order by version`,
    [fileHash],
  );
  return rows.map((r) => r.reason as string);
}

const contentEventsOf = async (fileHash: string) =>
  [
    ...(await outboxPayloads(h.sql, ProjectsEvents.contentTaken)),
    ...(await outboxPayloads(h.sql, ProjectsEvents.contentDropped)),
  ].filter((e) => e.fileHash === fileHash);
const readContent = (fileHash: string) => readWhitepaper(h.ipfsUrl, fileHash);
const recorded = (fileHash: string) =>
  expect.poll(() => isRecorded(h, fileHash), { timeout: 15_000 }).toBe(true);

describe("a gateway stopped between its pinned add and the write", () => {
  it("the sweep unpins the orphan after the grace period; a project's content and a younger orphan stay", async () => {
    const { caller } = await seed(h);
    const projectFile = uniqueBytes(120);
    const project = await addProject(h, caller, { file: projectFile });
    await recorded(project.fileHash);
    // What the stopped gateway had added, pinned; no write came.
    const orphan = fileHashOf((await addContent(h.ipfsUrl, { file: uniqueBytes(121), image: null }))!.cid);
    await h.storage.reconcile(); // first seen
    const young = fileHashOf((await addContent(h.ipfsUrl, { file: uniqueBytes(122), image: null }))!.cid);
    ahead += GRACE;
    const round = await h.storage.reconcile();
    expect(round).toMatchObject({ failed: 0, missing: 0 });
    expect(round.skipped).toBeUndefined();

    expect(await isPinned(h, orphan)).toBe(false);
    expect(await releasesOf(orphan)).toEqual([`storage:${UNRECORDED_REASON}`]);
    // The same round saw the project's content (held) and the young orphan (first seen in it).
    expect(await pinRowsOf(project.fileHash)).toEqual([{ unpinned_at: null, unpin_reason: null }]);
    expect(await isPinned(h, project.fileHash)).toBe(true);
    expect(Buffer.compare(await readContent(project.fileHash), projectFile)).toBe(0);
    expect(await isPinned(h, young)).toBe(true);
    expect(await releasesOf(young)).toEqual([]);
  });
});

describe("IPFS stopped between the gateway's add and the write", () => {
  it("the Add commits all the same (the projects service never asks the node); once IPFS is back its content is there", async () => {
    const { caller } = await seed(h);
    const projectName = uniqueProjectName("Offline");
    const file = uniqueBytes(131);
    const content = await addContent(h.ipfsUrl, { file, image: null });
    await h.stopIpfs();
    try {
      const added = await h.client.call(ProjectsRpc.add, {
        caller,
        project: { projectName, projectDescription: null, markDown: null, content },
      });
      expect(await projectNamed(projectName)).toEqual([{ id: added.projectID, file_hash: added.fileHash }]);
      // Recording needs no node either.
      await recorded(added.fileHash);
    } finally {
      await h.restartIpfs();
    }
    const [project] = await projectNamed(projectName);
    expect(await isPinned(h, project!.file_hash)).toBe(true);
    expect(Buffer.compare(await readContent(project!.file_hash), file)).toBe(0);
  });

  it("an Update with a new file commits; the old content's unpin fails with the node away and is the sweep's", async () => {
    const owner = await seed(h);
    const project = await addProject(h, owner.caller, { file: uniqueBytes(141) });
    await recorded(project.fileHash);
    const newFile = uniqueBytes(142);
    const content = await addContent(h.ipfsUrl, { file: newFile, image: null });
    await h.stopIpfs();
    let updated: Awaited<ReturnType<typeof updateProject>>;
    try {
      updated = await h.client.call(ProjectsRpc.update, {
        caller: owner.caller,
        project: {
          projectID: project.projectID,
          projectName: project.projectName,
          projectDescription: null,
          markDown: null,
          content,
        },
      });
      await contentSettled(h);
    } finally {
      await h.restartIpfs();
    }
    expect(updated.fileHash).not.toBe(project.fileHash);
    expect(await pinRowsOf(updated.fileHash)).toEqual([{ unpinned_at: null, unpin_reason: null }]);
    expect(await isPinned(h, updated.fileHash)).toBe(true);
    expect(Buffer.compare(await readContent(updated.fileHash), newFile)).toBe(0);
    // Released, but not unpinned: the node was away. Its row stays live until the sweep's part a.
    expect(await releasesOf(project.fileHash)).toEqual([`storage:project:${project.projectID}:replaced`]);
    expect(await isPinned(h, project.fileHash)).toBe(true);
    expect(await isRecorded(h, project.fileHash)).toBe(true);
    ahead += GRACE;
    await h.storage.reconcile();
    expect(await pinRowsOf(project.fileHash)).toMatchObject([{ unpin_reason: ORPHAN_REASON }]);
    expect(await isPinned(h, project.fileHash)).toBe(false);
    expect(await isPinned(h, updated.fileHash)).toBe(true);
  });
});

describe("the database failing in the middle of Add", () => {
  it("an error answer, no project and no content event; the gateway releases its content; a retry succeeds", async () => {
    const { caller } = await seed(h);
    const projectName = uniqueProjectName("Crash");
    const file = uniqueBytes(151);
    const fileHash = await fileHashOfContent(file);
    // The projects service's insert fails inside its Add transaction, after the gateway pinned the content.
    const refusal = {
      name: "crash",
      table: "projects.project",
      write: "insert",
      when: "new.name like 'Crash %'",
      message: "database failure in the middle of Add",
    } as const;
    await whileRefusing(h, refusal, async () => {
      const error = await addProject(h, caller, { projectName, file }, asGateway).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isAppError(error), `not an error envelope: ${String(error)}`).toBe(true);
      expect(error).toMatchObject({ kind: "internal", code: ErrorCode.INTERNAL });
    });
    expect(await projectNamed(projectName)).toEqual([]);
    expect(await contentEventsOf(fileHash)).toEqual([]);
    expect(await releasesOf(fileHash)).toEqual(["gateway:write-refused"]);
    expect(await isPinned(h, fileHash)).toBe(false);
    // Sent again: the same bytes, released a moment ago, are pinned again after that (CONTENT_RELEASED,
    // repinnedAfter) and the project is written once.
    const added = await addProject(h, caller, { projectName, file }, asGateway);
    expect(await projectNamed(projectName)).toEqual([{ id: added.projectID, file_hash: fileHash }]);
    expect((await contentEventsOf(fileHash)).map((e) => e.projectId)).toEqual([added.projectID]);
    expect(await isPinned(h, fileHash)).toBe(true);
    await recorded(fileHash);
    expect(Buffer.compare(await readContent(fileHash), file)).toBe(0);
  });
});

describe("the database failing in the middle of Delete", () => {
  it("a failure before the commit: an error answer, the project and its content intact; a retry deletes it", async () => {
    const owner = await seed(h);
    const file = uniqueBytes(161);
    const project = await addProject(h, owner.caller, { file });
    await recorded(project.fileHash);
    const refusal = {
      name: "no_delete",
      table: "projects.project",
      write: "delete",
      when: `old.id = ${project.projectID}`,
      message: "database failure in the middle of Delete",
    } as const;
    await whileRefusing(h, refusal, async () => {
      await expect(
        h.client.call(ProjectsRpc.delete, { caller: owner.caller, id: project.projectID }),
      ).rejects.toMatchObject({ kind: "internal" });
      const kept = await h.client.call(ProjectsRpc.get, { caller: owner.caller, id: project.projectID });
      expect(kept.fileHash).toBe(project.fileHash);
      expect((await contentEventsOf(project.fileHash)).map((e) => e.reason)).toEqual(["project:add"]);
      expect(await isPinned(h, project.fileHash)).toBe(true);
      expect(Buffer.compare(await readContent(project.fileHash), file)).toBe(0);
    });
    await h.client.call(ProjectsRpc.delete, { caller: owner.caller, id: project.projectID });
    await contentSettled(h);
    const deleted = `project:${project.projectID}:deleted`;
    expect(await pinRowsOf(project.fileHash)).toMatchObject([{ unpin_reason: deleted }]);
    expect(await isPinned(h, project.fileHash)).toBe(false);
  });

  it("storage failing as it records the drop: the project stays deleted; the drop, handled again, takes the content", async () => {
    const owner = await seed(h);
    const project = await addProject(h, owner.caller, { file: uniqueBytes(171) });
    await recorded(project.fileHash);
    const deleted = `project:${project.projectID}:deleted`;
    // The storage database refuses to mark the content's row: the drop's handling fails after its unpin.
    const refusal = {
      name: "no_unpin",
      table: "storage.pin",
      write: "update",
      when: `old.file_hash = '${project.fileHash}'`,
      message: "database failure in the storage service",
    } as const;
    await whileRefusing(h, refusal, async () => {
      await h.client.call(ProjectsRpc.delete, { caller: owner.caller, id: project.projectID });
      // Released (and unpinned) by a first handling, which could not mark the row and failed.
      await expect
        .poll(async () => (await releasesOf(project.fileHash)).length, { timeout: 15_000 })
        .toBeGreaterThan(0);
      expect(await isRecorded(h, project.fileHash)).toBe(true);
    });
    expect(await projectNamed(project.projectName)).toEqual([]);
    // The event comes again after its retry delay: released again, unpinned, marked; once.
    await contentSettled(h);
    expect(new Set(await releasesOf(project.fileHash))).toEqual(new Set([`storage:${deleted}`]));
    expect(await pinRowsOf(project.fileHash)).toMatchObject([{ unpin_reason: deleted }]);
    expect(await isPinned(h, project.fileHash)).toBe(false);
  });
});
