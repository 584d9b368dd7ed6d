import { cidOfFileHash, createKuboIpfs } from "@fundraise/ipfs";
import {
  type AppError,
  type Caller,
  CONTENT_RELEASE_WINDOW_MS,
  type ContentRef,
  ErrorCode,
  isAppError,
  ProjectsEvents,
  ProjectsRpc,
} from "@fundraise/protocol";
import { addContent } from "@fundraise/storage/src/test/harness.ts";
import { describe, expect, it } from "vitest";
import {
  addProject,
  asGateway,
  contentSettled,
  isPinned,
  isRecorded,
  outboxPayloads,
  seed,
  uniqueBytes,
  uniqueProjectName,
  useHarness,
} from "../test/harness.ts";

// The release rule (protocol's content-release.ts, ADR 0027) end to end on the real projects service, with
// the real storage service consuming its content events and the Kubo-RPC stand-in (packages/ipfs-node, not
// Kubo) as the node: content is unpinned only through a release, never while a project holds it, and a
// write that takes released content commits only with a pin made after the release was over.
const h = useHarness("content_release", { REVIEW_QUEUE_MAX: "1000" });

const release = (fileHashes: string[], reason = "test:release") =>
  h.client.call(ProjectsRpc.releaseContent, { fileHashes, reason });

/** An Add with this content reference (the bytes are on the node already), as the gateway writes it. */
const addWith = (caller: Caller, content: ContentRef, projectName = uniqueProjectName("Again")) =>
  h.client.call(ProjectsRpc.add, {
    caller,
    project: { projectName, projectDescription: null, markDown: null, content },
  });

/** The Add's refusal: CONTENT_RELEASED, its details. */
async function releasedRefusal(call: Promise<unknown>) {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isAppError(error), `not refused: ${String(error)}`).toBe(true);
  expect(error).toMatchObject({ kind: "unavailable", code: ErrorCode.CONTENT_RELEASED });
  return (error as AppError).details as { fileHash: string; version: number; waitMs: number };
}

/** Waits until storage handled the drop; then its inventory row is marked and the node no longer pins it. */
async function letGo(fileHash: string) {
  await contentSettled(h);
  expect(await isRecorded(h, fileHash)).toBe(false);
  expect(await isPinned(h, fileHash)).toBe(false);
}

describe("projects.content.release", () => {
  it("held content is answered held; a deleted project's content, released by storage, is refused until pinned again after", async () => {
    const { caller } = await seed(h);
    const file = uniqueBytes(400);
    const first = await addProject(h, caller, { file });
    await expect.poll(() => isRecorded(h, first.fileHash), { timeout: 15_000 }).toBe(true);
    expect(await release([first.fileHash], "test:held")).toEqual({ released: [], held: [first.fileHash] });
    expect(await isPinned(h, first.fileHash)).toBe(true);

    // Deleted: storage releases the content on content.dropped, unpins it and confirms the release.
    await h.client.call(ProjectsRpc.delete, { caller, id: first.projectID });
    await letGo(first.fileHash);

    // The same bytes again (the add pins them again, maybe before a late unpin): refused, nothing written.
    const ref = (await addContent(h.ipfsUrl, { file, image: null }))!;
    const name = uniqueProjectName("Again");
    const refused = await releasedRefusal(addWith(caller, ref, name));
    expect(refused).toMatchObject({ fileHash: first.fileHash, version: expect.any(Number) });
    // Confirmed by storage: nothing to wait for, the content is to be pinned again.
    const confirmed = async () => (await releasedRefusal(addWith(caller, ref, name))).waitMs;
    await expect.poll(confirmed, { timeout: 20_000 }).toBe(0);
    const { rows } = await h.sql.query(`select 1 from projects.project where name = $1`, [name]);
    expect(rows).toEqual([]);

    // A pin made after the release was over, said so with its version: the write commits.
    await createKuboIpfs({ url: h.ipfsUrl, timeoutMs: 10_000, readTimeoutMs: 10_000 }).pin(
      cidOfFileHash(first.fileHash),
    );
    const again = await addWith(caller, { ...ref, repinnedAfter: refused.version }, name);
    expect(again).toMatchObject({ projectName: name, fileHash: first.fileHash });
    expect(await isPinned(h, again.fileHash)).toBe(true);
    await expect.poll(() => isRecorded(h, again.fileHash), { timeout: 15_000 }).toBe(true);
    const taken = await outboxPayloads(h.sql, ProjectsEvents.contentTaken);
    expect(taken.filter((e) => e.fileHash === first.fileHash).map((e) => e.projectId)).toEqual([
      first.projectID,
      again.projectID,
    ]);
  });

  it("a release not confirmed yet: the write waits (waitMs > 0) until its unpinner confirms it", async () => {
    const { caller } = await seed(h);
    const file = uniqueBytes(410);
    const ref = (await addContent(h.ipfsUrl, { file, image: null }))!;
    const dto = await addWith(caller, ref);
    // Recorded before the deletion: `taken` and `dropped` come on separate queues, and a `taken` handled
    // after its `dropped` records a live row the sweep releases later (reconcile.ts, part c), not at once.
    await expect.poll(() => isRecorded(h, dto.fileHash), { timeout: 15_000 }).toBe(true);
    await h.client.call(ProjectsRpc.delete, { caller, id: dto.projectID });
    await letGo(dto.fileHash);
    // An unpinner of its own (as the gateway for a refused write): released, its unpin not confirmed yet.
    const [mine] = (await release([dto.fileHash])).released;
    expect(mine).toMatchObject({ fileHash: dto.fileHash });
    const { version } = mine!;
    // A pin said to come after the earlier release (storage's) does not cover this one.
    const waiting = await releasedRefusal(addWith(caller, { ...ref, repinnedAfter: version - 1 }));
    expect(waiting.version).toBe(version);
    expect(waiting.waitMs).toBeGreaterThan(0);
    expect(waiting.waitMs).toBeLessThanOrEqual(CONTENT_RELEASE_WINDOW_MS);
    await h.client.call(ProjectsRpc.confirmRelease, { releases: [mine!] });
    expect(await releasedRefusal(addWith(caller, ref))).toMatchObject({ version, waitMs: 0 });
    // The gateway's protocol from there: pins again, writes with the version; the project has its content.
    const again = await addProject(h, caller, { file }, asGateway);
    expect(again.fileHash).toBe(dto.fileHash);
    expect(await isPinned(h, again.fileHash)).toBe(true);
  });
});

describe("a deletion racing an Add of the same bytes (the gateway's protocol), 20 rounds", () => {
  it("after each round, storage settled: no project holds the bytes and the node does not pin them, or the one that does has them pinned", async () => {
    const { caller } = await seed(h);
    const file = uniqueBytes(420);
    type Dto = Awaited<ReturnType<typeof addProject>>;
    const add = (): Promise<Dto> => addProject(h, caller, { file }, asGateway);
    let holder: Dto | null = await add();
    for (let round = 0; round < 20; round++) {
      holder ??= await add();
      const deleting: Dto = holder;
      // Started a few ms apart, one way or the other by the round: either may reach the projects service
      // first, and storage's release of the deleted project's content may come before, between or after.
      const lead = [-6, 0, 3, 6, 10][round % 5] as number;
      const after = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
      const [deleted, added] = await Promise.allSettled([
        after(-lead).then(() => h.client.call(ProjectsRpc.delete, { caller, id: deleting.projectID })),
        after(lead).then(add),
      ]);
      expect(deleted.status, `round ${round}`).toBe("fulfilled");
      if (added.status === "rejected") {
        expect(added.reason, `round ${round}`).toMatchObject({ code: ErrorCode.PROJECT_FILE_TAKEN });
      }
      holder = added.status === "fulfilled" ? added.value : null;
      await contentSettled(h);
      const { rows } = await h.sql.query<{ id: number }>(
        `select id from projects.project where file_hash = $1`,
        [deleting.fileHash],
      );
      expect(
        rows.map((r) => r.id),
        `round ${round}`,
      ).toEqual(holder ? [holder.projectID] : []);
      expect(await isPinned(h, deleting.fileHash), `round ${round}: pinned`).toBe(holder !== null);
      expect(await isRecorded(h, deleting.fileHash), `round ${round}: recorded`).toBe(holder !== null);
    }
  }, 180_000);
});
