import { cidOfFileHash } from "@fundraise/ipfs";
import { ProjectsEvents, StorageEvents } from "@fundraise/protocol";
import { create } from "kubo-rpc-client";
import { CID } from "multiformats/cid";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Added,
  addWhitepaper,
  contentNotOnNode,
  drained,
  type Harness,
  nodePins,
  outboxPayloads,
  pinRows,
  publish,
  REAL_KUBO_URL,
  startHarness,
  takenOf,
} from "../test/harness.ts";
import { ORPHAN_REASON, RECONCILE_LOCK } from "./reconcile.ts";

// Parts a and c of the reconciliation round (part b: unrecorded-pins.int.test.ts), on the Kubo-RPC
// stand-in (packages/ipfs-node, not Kubo) or IPFS_API_URL's Kubo. `projects.content.held` and the
// releases are answered by A STAND-IN FOR THE PROJECTS SERVICE (test/projects-stand-in.ts). The grace
// period runs on a clock the test moves; rows are recorded on that clock.
const GRACE = 900_000; // ORPHAN_GRACE_MS's default
let now = Date.now();
let h: Harness;
beforeAll(async () => {
  h = await startHarness("reconcile", {}, () => now, { projects: false });
});
afterAll(async () => h?.stop());

/** Content the gateway added pinned and a project took (its row recorded now, on the test's clock). */
async function taken(): Promise<Added> {
  const added = await addWhitepaper(h.ipfsUrl);
  await publish(h, ProjectsEvents.contentTaken, takenOf(added));
  await drained(h, ProjectsEvents.contentTaken);
  return added;
}
const liveRow = async (fileHash: string) =>
  (await pinRows(h.sql)).find((r) => r.file_hash === fileHash && r.unpinned_at === null);

describe("without an answer from the projects service", () => {
  it("the projects service is not running: nothing is unpinned, the round says why", async () => {
    const orphan = await taken();
    now += GRACE + 1;
    const round = await h.app.reconcile();
    expect(round).toMatchObject({ removed: 0, orphans: 0, skipped: "projects service unavailable" });
    expect(await liveRow(orphan.fileHash)).toBeDefined();
    expect(await nodePins(h.ipfsUrl, orphan.cid)).toBe(true);
    expect(await outboxPayloads(h.sql, StorageEvents.unpinned)).toEqual([]);
    await h.projects.start();
  });

  it("another replica holds the reconciliation lock: this one skips its round", async () => {
    const other = new pg.Client({ connectionString: h.db.url });
    await other.connect();
    try {
      await other.query("select pg_advisory_lock(hashtext($1))", [RECONCILE_LOCK]);
      expect(await h.app.reconcile()).toMatchObject({
        checked: 0,
        skipped: "another replica is reconciling",
      });
    } finally {
      await other.end();
    }
  });
});

describe("part a: live rows no project holds", () => {
  it("unpins and marks old content no project holds; keeps held content and content inside the grace period", async () => {
    // The first describe's orphan is still live and old: it goes too.
    const held = await taken();
    const orphan = await taken();
    now += GRACE + 1;
    const young = await taken();
    h.projects.held.add(held.fileHash);
    const round = await h.app.reconcile();
    expect(round).toMatchObject({ checked: 3, orphans: 2, removed: 2, failed: 0, repinned: 0, missing: 0 });
    expect(round.skipped).toBeUndefined();
    const row = (await pinRows(h.sql)).find((r) => r.file_hash === orphan.fileHash);
    expect(row?.unpinned_at).toBeInstanceOf(Date);
    expect(row?.unpin_reason).toBe(ORPHAN_REASON);
    expect(await nodePins(h.ipfsUrl, orphan.cid)).toBe(false);
    expect(await outboxPayloads(h.sql, StorageEvents.unpinned)).toContainEqual({
      fileHash: orphan.fileHash,
      cid: orphan.cid,
      reason: ORPHAN_REASON,
    });
    expect(h.projects.released.find((r) => r.fileHash === orphan.fileHash)?.reason).toBe(
      `storage:${ORPHAN_REASON}`,
    );
    for (const kept of [held, young]) {
      expect(await liveRow(kept.fileHash)).toBeDefined();
      expect(await nodePins(h.ipfsUrl, kept.cid)).toBe(true);
    }
    // The next round has nothing left to remove.
    expect(await h.app.reconcile()).toMatchObject({ checked: 1, orphans: 0, removed: 0 });
  });

  it("a project takes the content between the round's question and its release: it stays", async () => {
    const added = await taken();
    now += GRACE + 1;
    h.projects.afterHeld = async () => {
      h.projects.afterHeld = undefined;
      h.projects.held.add(added.fileHash);
    };
    const round = await h.app.reconcile();
    // The previous test's young content is old now: the other orphan, removed.
    expect(round).toMatchObject({ orphans: 2, removed: 1, failed: 0 });
    expect(await liveRow(added.fileHash)).toBeDefined();
    expect(await nodePins(h.ipfsUrl, added.cid)).toBe(true);
  });

  it(
    "asks at most 1000 contents at once",
    async () => {
      // Inventory rows only (content the node lacks): every one is held, so nothing is released.
      const hashes = Array.from({ length: 1001 }, (_, i) =>
        Buffer.from(`${i}`.padStart(32, "b")).toString("hex").toUpperCase(),
      );
      await h.sql.query(
        `insert into storage.pin (cid, file_hash, reason, file_bytes, pinned_at, last_uploaded_at)
       select unnest($1::text[]), unnest($2::text[]), 'batch', 1, now() - interval '1 hour', now() - interval '1 hour'`,
        [hashes.map((hash) => cidOfFileHash(hash).toString()), hashes],
      );
      try {
        for (const hash of hashes) h.projects.held.add(hash);
        h.projects.heldAsks.length = 0;
        const round = await h.app.reconcile();
        expect(round).toMatchObject({ orphans: 0, removed: 0 });
        expect(round.checked).toBeGreaterThan(1001);
        expect(Math.max(...h.projects.heldAsks)).toBe(1000);
        expect(h.projects.heldAsks.reduce((a, b) => a + b, 0)).toBe(round.checked);
        // Part c looked for them on the node: missing, each logged, none thrown.
        expect(round.missing).toBe(1001);
      } finally {
        await h.sql.query(`delete from storage.pin where reason = 'batch'`);
      }
      // Its round asks the node to pin each of the 1,001 contents again, one after another: 18 s alone on a
      // loaded 2-core machine, over the 30 s every test has beside other files. Its limit follows that work.
    },
    1001 * 100,
  );
});

describe("part c: live rows whose content the node does not pin", () => {
  it("content unpinned on the node behind storage's back is pinned again", async () => {
    const added = await taken();
    await create({ url: h.ipfsUrl }).pin.rm(CID.parse(added.cid));
    expect(await nodePins(h.ipfsUrl, added.cid)).toBe(false);
    h.projects.held.add(added.fileHash);
    expect(await h.app.reconcile()).toMatchObject({ repinned: 1, missing: 0, failed: 0 });
    expect(await nodePins(h.ipfsUrl, added.cid)).toBe(true);
    expect(await liveRow(added.fileHash)).toBeDefined();
  });

  it.skipIf(REAL_KUBO_URL !== undefined)(
    "content whose blocks the node lacks is counted missing; the round goes on and throws nothing",
    async () => {
      const gone = await contentNotOnNode();
      await publish(h, ProjectsEvents.contentTaken, takenOf(gone));
      await drained(h, ProjectsEvents.contentTaken);
      h.projects.held.add(gone.fileHash);
      const round = await h.app.reconcile();
      expect(round).toMatchObject({ repinned: 0, missing: 1, failed: 0 });
      expect(round.skipped).toBeUndefined();
      expect(await liveRow(gone.fileHash)).toBeDefined();
      // Still missing next round: counted again, never unpinned or marked.
      expect(await h.app.reconcile()).toMatchObject({ missing: 1 });
    },
  );
});
