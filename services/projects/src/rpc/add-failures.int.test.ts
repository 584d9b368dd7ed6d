import { ProjectsRpc } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import {
  addProject,
  expectAppError,
  isPinned,
  seed,
  uniqueBytes,
  uniqueProjectName,
  useHarness,
  whileRefusing,
} from "../test/harness.ts";

// The review queue and what a failed Add leaves behind, with a queue of 2 (behaviour.md §4 says 100;
// REVIEW_QUEUE_MAX is the same rule, smaller), on the real storage service and the Kubo-RPC stand-in.
const h = useHarness("add_failures", { REVIEW_QUEUE_MAX: "2" });

async function pinsOfBytes(size: number) {
  const { rows } = await h.sql.query(`select file_hash, unpinned_at from storage.pin where file_bytes = $1`, [
    size,
  ]);
  return rows as { file_hash: string; unpinned_at: Date | null }[];
}

describe("the review queue", () => {
  it("503 PROJECT_REVIEW_QUEUE_FULL once REVIEW_QUEUE_MAX projects wait for a viewer; a review frees a place", async () => {
    const { caller } = await seed(h);
    const first = await addProject(h, caller);
    await addProject(h, caller);
    const file = uniqueBytes(77);
    await expectAppError(addProject(h, caller, { file }), "unavailable", "PROJECT_REVIEW_QUEUE_FULL");
    expect(await pinsOfBytes(77)).toEqual([]); // refused before the upload
    const viewer = (await seed(h, "Viewer")).caller;
    await h.client.call(ProjectsRpc.viewerReply, { caller: viewer, id: first.projectID, reply: true });
    const third = await addProject(h, caller, { file });
    expect(third.status).toBe("Pending");
    // Concurrent adds at the limit: exactly one more fits (the queue is counted under a lock).
    await h.client.call(ProjectsRpc.viewerReply, { caller: viewer, id: third.projectID, reply: true });
    const results = await Promise.allSettled([
      addProject(h, caller),
      addProject(h, caller),
      addProject(h, caller),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const { rows } = await h.sql.query(
      `select count(*)::int as n from projects.project where status = 'Pending' and not viewer_accepted`,
    );
    expect(rows[0].n).toBe(2);
    // The refused ones' content was uploaded (they passed the early check together) and is removed again.
    await expect
      .poll(async () => {
        const { rows: live } = await h.sql.query(
          `select count(*)::int as n from storage.pin p where unpinned_at is null
           and not exists (select 1 from projects.project j where j.file_hash = p.file_hash)`,
        );
        return live[0].n;
      })
      .toBe(0);
  });
});

describe("a failure after the upload", () => {
  it("removes the uploaded content and writes no project", async () => {
    const { caller } = await seed(h);
    // Empty the queue for this test.
    await h.sql.query(`update projects.project set viewer_accepted = true`);
    const name = uniqueProjectName("Boom");
    const refusal = {
      name: "boom",
      table: "projects.project",
      write: "insert",
      when: "new.name like 'Boom %'",
      message: "database failure in the middle of Add",
    } as const;
    await whileRefusing(h, refusal, async () => {
      const file = uniqueBytes(91);
      await expect(addProject(h, caller, { projectName: name, file })).rejects.toMatchObject({
        kind: "internal",
      });
      const pins = await pinsOfBytes(91);
      expect(pins).toHaveLength(1);
      expect(pins[0]?.unpinned_at).not.toBeNull();
      expect(await isPinned(h, pins[0]!.file_hash)).toBe(false);
      const { rows } = await h.sql.query(`select 1 from projects.project where name = $1`, [name]);
      expect(rows).toEqual([]);
    });
  });
});
