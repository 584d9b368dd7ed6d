import { testMessageContext } from "@fundraise/bus/testing";
import { ProjectsEvents, StorageEvents } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import { type Content, GRACE_MS, newContent, storageOnMemory } from "../test/memory-storage.ts";
import { ORPHAN_REASON, RECONCILE_LOCK, RECORDED_REASON, UNRECORDED_REASON } from "./reconcile.ts";

// The sweep's decisions (ADR 0023) on memory (test/memory-storage.ts): the inventory in memory, AN
// IN-MEMORY IPFS NODE (not Kubo), A STAND-IN FOR THE PROJECTS SERVICE on the in-memory bus, a clock the
// test moves. The advisory lock across processes and the SQL are the integration suites'.

type Setup = Awaited<ReturnType<typeof storageOnMemory>>;
/** A CIDv1 (raw leaves): pinned by someone else, never a project's content. */
const CID_V1 = "bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4";

/** Content the gateway added pinned and a project took, recorded now (on the test's clock). */
async function taken(h: Setup, projectId = 1): Promise<Content> {
  const content = h.ipfs.add();
  await h.bus.publish(ProjectsEvents.contentTaken, {
    projectId,
    fileHash: content.fileHash,
    cid: content.cid,
    fileBytes: 100,
    imageBytes: null,
    reason: "project:add",
  });
  return content;
}
const live = (h: Setup, content: Content) => h.pins.liveRow(content.fileHash);

describe("a round that cannot decide", () => {
  it("another replica holds the reconciliation lock: this one skips its round and asks nothing", async () => {
    const h = await storageOnMemory();
    await taken(h);
    h.tick(GRACE_MS + 1);
    const other = h.pins.holdLock(RECONCILE_LOCK);
    expect(await h.reconciler.round()).toMatchObject({
      checked: 0,
      skipped: "another replica is reconciling",
    });
    expect(h.projects.heldAsks).toEqual([]);
    other.release();
    expect(await h.reconciler.round()).toMatchObject({ checked: 1, removed: 1 });
  });

  it("the projects service not running: nothing is unpinned, the round says why, and still pins again what lacks its pin", async () => {
    const h = await storageOnMemory();
    const orphan = await taken(h);
    const unpinnedBehindItsBack = await taken(h);
    h.ipfs.pinned.delete(unpinnedBehindItsBack.cid);
    h.tick(GRACE_MS + 1);
    h.projects.running = false;
    const round = await h.reconciler.round();
    expect(round).toMatchObject({
      orphans: 0,
      removed: 0,
      repinned: 1,
      skipped: "projects service unavailable",
    });
    expect(live(h, orphan)).toBeDefined();
    expect(h.ipfs.pinned.has(orphan.cid)).toBe(true);
    expect(h.ipfs.pinned.has(unpinnedBehindItsBack.cid)).toBe(true);
    expect(h.eventsNamed(StorageEvents.unpinned.name)).toEqual([]);
  });

  it("the node away: the round stops, says so, and removes nothing", async () => {
    const h = await storageOnMemory();
    const orphan = await taken(h);
    h.tick(GRACE_MS + 1);
    h.ipfs.down = true;
    expect(await h.reconciler.round()).toMatchObject({ removed: 0, skipped: "IPFS or database unavailable" });
    h.ipfs.down = false;
    expect(live(h, orphan)).toBeDefined();
    expect(h.ipfs.pinned.has(orphan.cid)).toBe(true);
  });
});

describe("part a: live rows no project holds", () => {
  it("unpins and marks old content no project holds; keeps held content and content inside the grace period", async () => {
    const h = await storageOnMemory();
    const held = await taken(h, 1);
    const orphan = await taken(h, 2);
    h.tick(GRACE_MS + 1);
    const young = await taken(h, 3);
    h.projects.held.add(held.fileHash);
    const round = await h.reconciler.round();
    expect(round).toEqual({
      checked: 2,
      orphans: 1,
      removed: 1,
      failed: 0,
      recorded: 0,
      repinned: 0,
      missing: 0,
    });
    expect(live(h, orphan)).toBeUndefined();
    expect([...h.pins.pins.values()].find((pin) => pin.fileHash === orphan.fileHash)).toMatchObject({
      unpinnedAt: h.now(),
      unpinReason: ORPHAN_REASON,
    });
    expect(h.ipfs.pinned.has(orphan.cid)).toBe(false);
    expect(h.eventsNamed(StorageEvents.unpinned.name)).toEqual([
      { fileHash: orphan.fileHash, cid: orphan.cid, reason: ORPHAN_REASON },
    ]);
    expect(h.projects.released.map((r) => r.reason)).toEqual([`storage:${ORPHAN_REASON}`]);
    for (const kept of [held, young]) {
      expect(live(h, kept)).toBeDefined();
      expect(h.ipfs.pinned.has(kept.cid)).toBe(true);
    }
    // The next round has nothing left to remove.
    expect(await h.reconciler.round()).toMatchObject({ checked: 1, orphans: 0, removed: 0 });
  });

  it("a project takes the content between the round's question and its release: it stays", async () => {
    const h = await storageOnMemory();
    const content = await taken(h);
    h.tick(GRACE_MS + 1);
    h.projects.afterHeld = () => {
      h.projects.afterHeld = undefined;
      h.projects.held.add(content.fileHash);
    };
    expect(await h.reconciler.round()).toMatchObject({ orphans: 1, removed: 0, failed: 0 });
    expect(live(h, content)).toBeDefined();
    expect(h.ipfs.pinned.has(content.cid)).toBe(true);
  });

  it("an unpin the node fails is counted failed, the row stays live, and the next round unpins it", async () => {
    const h = await storageOnMemory();
    const content = await taken(h);
    h.tick(GRACE_MS + 1);
    h.ipfs.failingUnpins.add(content.cid);
    expect(await h.reconciler.round()).toMatchObject({ orphans: 1, removed: 0, failed: 1 });
    expect(live(h, content)).toBeDefined();
    h.ipfs.failingUnpins.clear();
    expect(await h.reconciler.round()).toMatchObject({ orphans: 1, removed: 1, failed: 0 });
    expect(live(h, content)).toBeUndefined();
  });

  it("asks the projects service at most a batch at a time, every old row once", async () => {
    const h = await storageOnMemory();
    const recordedAt = new Date(h.now().getTime() - 2 * GRACE_MS);
    for (let i = 0; i < 1_001; i++) {
      const content = newContent();
      h.pins.seed(content, recordedAt);
      h.projects.held.add(content.fileHash);
    }
    const round = await h.reconciler.round();
    expect(round).toMatchObject({ checked: 1_001, orphans: 0, removed: 0 });
    expect(h.projects.heldAsks).toEqual([1000, 1]);
    // Part c looked for them on the node, which never had them: missing, each counted, none thrown.
    expect(round.missing).toBe(1_001);
    expect(round.skipped).toBeUndefined();
  });
});

describe("part b: content pinned without a live row", () => {
  it("after a grace period: unpinned when no project holds it, recorded when one does; other pins untouched", async () => {
    const h = await storageOnMemory();
    const orphan = h.ipfs.add();
    const held = h.ipfs.add();
    const notAProject = h.ipfs.add({ project: false });
    h.ipfs.pinned.add(CID_V1);
    h.projects.held.add(held.fileHash);

    // First seen: remembered only (a write between the gateway's add and its commit looks the same), and
    // left alone until the grace period is over.
    expect(await h.reconciler.round()).toMatchObject({ orphans: 0, removed: 0, recorded: 0 });
    h.tick(GRACE_MS - 1);
    expect(await h.reconciler.round()).toMatchObject({ orphans: 0, removed: 0, recorded: 0 });
    expect(h.projects.released).toEqual([]);
    const young = h.ipfs.add();
    h.tick(1);
    const round = await h.reconciler.round();
    expect(round).toEqual({
      checked: 0,
      orphans: 2,
      removed: 1,
      failed: 0,
      recorded: 1,
      repinned: 0,
      missing: 0,
    });

    expect(h.ipfs.pinned.has(orphan.cid)).toBe(false);
    expect(live(h, orphan)).toBeUndefined();
    expect(h.projects.released.map((r) => [r.fileHash, r.reason])).toEqual([
      [orphan.fileHash, `storage:${UNRECORDED_REASON}`],
    ]);

    expect(h.ipfs.pinned.has(held.cid)).toBe(true);
    expect(live(h, held)).toMatchObject({
      cid: held.cid,
      reason: RECORDED_REASON,
      fileBytes: null,
      imageBytes: null,
    });
    expect(h.eventsNamed(StorageEvents.pinned.name)).toEqual([
      { fileHash: held.fileHash, cid: held.cid, reason: RECORDED_REASON },
    ]);

    // Not a project's shape, or not a CIDv0: never released, never touched.
    for (const other of [notAProject.cid, CID_V1]) expect(h.ipfs.pinned.has(other)).toBe(true);

    // Seen a round later than the others: still inside its grace period, then gone.
    expect(h.ipfs.pinned.has(young.cid)).toBe(true);
    h.tick(GRACE_MS);
    expect(await h.reconciler.round()).toMatchObject({ orphans: 1, removed: 1, recorded: 0 });
    expect(h.ipfs.pinned.has(young.cid)).toBe(false);
    for (const other of [notAProject.cid, CID_V1]) expect(h.ipfs.pinned.has(other)).toBe(true);
  });

  it("content the projects service announces in between is left to its record", async () => {
    const h = await storageOnMemory();
    const content = h.ipfs.add();
    expect(await h.reconciler.round()).toMatchObject({ removed: 0 });
    // The write the pin belonged to commits after all; its event records the content.
    await h.content.taken(
      { projectId: 1, ...content, fileBytes: 900, imageBytes: null, reason: "project:add" },
      testMessageContext(),
    );
    h.projects.held.add(content.fileHash);
    h.tick(GRACE_MS);
    expect(await h.reconciler.round()).toMatchObject({ orphans: 0, removed: 0, recorded: 0 });
    expect(live(h, content)).toMatchObject({ reason: "project:add" });
    expect(h.ipfs.pinned.has(content.cid)).toBe(true);
  });

  it("turned off (a node shared with others): unrecorded pins are never touched", async () => {
    const h = await storageOnMemory({ sweepUnrecorded: false });
    const content = h.ipfs.add();
    await h.reconciler.round();
    h.tick(10 * GRACE_MS);
    expect(await h.reconciler.round()).toMatchObject({ orphans: 0, removed: 0, recorded: 0 });
    expect(h.ipfs.pinned.has(content.cid)).toBe(true);
    expect(h.projects.released).toEqual([]);
  });
});

describe("part c: live rows whose content the node does not pin", () => {
  it("content unpinned on the node behind storage's back is pinned again", async () => {
    const h = await storageOnMemory();
    const content = await taken(h);
    h.ipfs.pinned.delete(content.cid);
    h.projects.held.add(content.fileHash);
    expect(await h.reconciler.round()).toMatchObject({ repinned: 1, missing: 0, failed: 0 });
    expect(h.ipfs.pinned.has(content.cid)).toBe(true);
    expect(live(h, content)).toBeDefined();
  });

  it("content whose blocks the node lacks is counted missing, every round; never unpinned or marked", async () => {
    const h = await storageOnMemory();
    const gone = newContent();
    await h.content.taken(
      { projectId: 1, ...gone, fileBytes: 64, imageBytes: null, reason: "project:add" },
      testMessageContext(),
    );
    h.projects.held.add(gone.fileHash);
    const round = await h.reconciler.round();
    expect(round).toMatchObject({ repinned: 0, missing: 1, failed: 0 });
    expect(round.skipped).toBeUndefined();
    expect(await h.reconciler.round()).toMatchObject({ missing: 1 });
    expect(live(h, gone)).toBeDefined();
  });
});
