import { ProjectsEvents, ProjectsRpc } from "@fundraise/protocol";
import { UNRECORDED_REASON } from "@fundraise/storage/src/content/reconcile.ts";
import { describe, expect, it } from "vitest";
import {
  addProject,
  expectAppError,
  fileHashOfContent,
  isPinned,
  isRecorded,
  outboxPayloads,
  seed,
  uniqueBytes,
  uniqueProjectName,
  useHarness,
  whileRefusing,
} from "../test/harness.ts";

// The review queue and what a refused or failed Add leaves behind, with a queue of 2 (rules.md §4.6 says
// 100; REVIEW_QUEUE_MAX is the same rule, smaller), on the real storage service and the Kubo-RPC stand-in.
// The gateway adds an Add's content pinned before the write (ADR 0027); a refused write's content is the
// gateway's to release, and what stays pinned is the storage service's sweep's (part b, pins without a
// row). The sweep's grace periods run on a storage clock the test moves (ORPHAN_GRACE_MS cannot be set
// below 2 minutes); no timer: rounds run when the test calls them.
const GRACE = 900_000; // ORPHAN_GRACE_MS's default
let ahead = 0;
const h = useHarness("add_failures", { REVIEW_QUEUE_MAX: "2" }, { storageClock: () => Date.now() + ahead });

/** The content events the projects service emitted about this content (taken, dropped). */
async function contentEventsOf(fileHash: string) {
  const taken = await outboxPayloads(h.sql, ProjectsEvents.contentTaken);
  const dropped = await outboxPayloads(h.sql, ProjectsEvents.contentDropped);
  return [...taken, ...dropped].filter((e) => e.fileHash === fileHash);
}

describe("the review queue", () => {
  it("503 PROJECT_REVIEW_QUEUE_FULL once REVIEW_QUEUE_MAX projects wait for a viewer; a review frees a place", async () => {
    const { caller } = await seed(h);
    const first = await addProject(h, caller);
    await addProject(h, caller);
    const file = uniqueBytes(77);
    await expectAppError(addProject(h, caller, { file }), "unavailable", "PROJECT_REVIEW_QUEUE_FULL");
    // Refused: the content the gateway pinned was not taken by any project.
    expect(await contentEventsOf(await fileHashOfContent(file))).toEqual([]);
    const viewer = (await seed(h, "Viewer")).caller;
    await h.client.call(ProjectsRpc.viewerReply, { caller: viewer, id: first.projectID, reply: true });
    const third = await addProject(h, caller, { file });
    expect(third.status).toBe("Pending");
    // Concurrent adds at the limit: exactly one more fits (the queue is counted under a lock).
    await h.client.call(ProjectsRpc.viewerReply, { caller: viewer, id: third.projectID, reply: true });
    const files = [uniqueBytes(78), uniqueBytes(78), uniqueBytes(78)];
    const results = await Promise.allSettled(files.map((f) => addProject(h, caller, { file: f })));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const { rows } = await h.sql.query(
      `select count(*)::int as n from projects.project where status = 'Pending' and not viewer_accepted`,
    );
    expect(rows[0].n).toBe(2);
    // Only the one that fits took its content.
    const taken = [];
    for (const f of files) taken.push(...(await contentEventsOf(await fileHashOfContent(f))));
    expect(taken.map((e) => e.projectId)).toEqual(
      results.flatMap((r) => (r.status === "fulfilled" ? [r.value.projectID] : [])),
    );
  });
});

describe("a failure after the upload", () => {
  it("writes no project and no content event; the content is released when asked, and swept after the grace period", async () => {
    const { caller } = await seed(h);
    // Empty the queue for this test.
    await h.sql.query(`update projects.project set viewer_accepted = true`);
    const name = uniqueProjectName("Boom");
    const file = uniqueBytes(91);
    const fileHash = await fileHashOfContent(file);
    const refusal = {
      name: "boom",
      table: "projects.project",
      write: "insert",
      when: "new.name like 'Boom %'",
      message: "database failure in the middle of Add",
    } as const;
    await whileRefusing(h, refusal, async () => {
      await expect(addProject(h, caller, { projectName: name, file })).rejects.toMatchObject({
        kind: "internal",
      });
    });
    const { rows } = await h.sql.query(`select 1 from projects.project where name = $1`, [name]);
    expect(rows).toEqual([]);
    expect(await contentEventsOf(fileHash)).toEqual([]);
    expect(await isRecorded(h, fileHash)).toBe(false);
    // Pinned by the gateway's add; no project holds it, so a release is granted (the gateway asks so).
    expect(await isPinned(h, fileHash)).toBe(true);
    const answer = await h.client.call(ProjectsRpc.releaseContent, {
      fileHashes: [fileHash],
      reason: "gateway:write-refused",
    });
    expect(answer).toEqual({ released: [{ fileHash, version: expect.any(Number) }], held: [] });

    // That unpin never came (a gateway stopped after asking): the sweep's part b unpins it, once it was
    // seen pinned without a row for a grace period; a project's content in the same rounds stays.
    const project = await addProject(h, caller);
    await expect.poll(() => isRecorded(h, project.fileHash), { timeout: 15_000 }).toBe(true);
    await h.storage.reconcile(); // first seen
    expect(await isPinned(h, fileHash)).toBe(true);
    ahead += GRACE;
    const round = await h.storage.reconcile();
    expect(round).toMatchObject({ failed: 0, missing: 0 });
    expect(round.removed).toBeGreaterThanOrEqual(1); // with the queue's refused Adds above, if they ran
    expect(round.skipped).toBeUndefined();
    expect(await isPinned(h, fileHash)).toBe(false);
    const released = await h.sql.query(
      `select reason from projects.content_release where file_hash = $1 order by version`,
      [fileHash],
    );
    expect(released.rows.map((r) => r.reason)).toEqual([
      "gateway:write-refused",
      `storage:${UNRECORDED_REASON}`,
    ]);
    expect(await isPinned(h, project.fileHash)).toBe(true);
    expect(await isRecorded(h, project.fileHash)).toBe(true);
  });
});
