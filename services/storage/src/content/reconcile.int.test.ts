import { randomBytes } from "node:crypto";
import { ProjectsRpc, StorageEvents, StorageRpc } from "@fundraise/protocol";
import { create } from "kubo-rpc-client";
import { CID } from "multiformats/cid";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  agePin,
  type Harness,
  nodePins,
  outboxPayloads,
  pinRows,
  REAL_KUBO_URL,
  startHarness,
  storeContent,
} from "../test/harness.ts";
import { ORPHAN_REASON, RECONCILE_LOCK } from "./reconcile.ts";

// The storage service alone, on the Kubo-RPC stand-in (packages/ipfs-node, not Kubo) or IPFS_API_URL's
// Kubo. The end-to-end case with the real projects service is services/projects/src/rpc/faults.int.test.ts.
// The later tests answer `projects.content.held` from the test client IN PLACE OF THE PROJECTS SERVICE
// (the storage package cannot start it), so that they can place an upload inside a round.
const HOUR = 3_600_000;
let h: Harness;
beforeAll(async () => {
  h = await startHarness("reconcile");
});
afterAll(async () => h?.stop());

const upload = (file: Uint8Array = randomBytes(500)) =>
  storeContent(h, { file, image: null, reason: "project:add" });
const liveRow = async (fileHash: string) =>
  (await pinRows(h.sql)).find((r) => r.file_hash === fileHash && r.unpinned_at === null);

describe("orphan reconciliation without an answer from the projects service", () => {
  it("the projects service is not running: the round is skipped and nothing is unpinned", async () => {
    const orphan = await upload();
    await agePin(h.sql, orphan.fileHash, HOUR);
    const round = await h.app.reconcile();
    expect(round).toMatchObject({ removed: 0, orphans: 0, skipped: "projects service unavailable" });
    expect(await liveRow(orphan.fileHash)).toBeDefined();
    expect(await nodePins(h.ipfsUrl, orphan.cid)).toBe(true);
    expect(await outboxPayloads(h.sql, StorageEvents.unpinned)).toEqual([]);
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

describe("orphan reconciliation against a stand-in of the projects service's heldContent", () => {
  let answer: (fileHashes: string[]) => Promise<string[]> = async () => [];
  const asked: number[] = [];
  beforeAll(async () => {
    await h.client.serve(ProjectsRpc.heldContent, async ({ fileHashes }) => {
      asked.push(fileHashes.length);
      return answer(fileHashes);
    });
  });

  it("removes old content no project holds, keeps held content and content inside the grace period", async () => {
    // Every live pin so far (the first describe's orphan too) is asked about.
    const held = await upload();
    const orphan = await upload();
    const young = await upload();
    await agePin(h.sql, held.fileHash, HOUR);
    await agePin(h.sql, orphan.fileHash, HOUR);
    answer = async (hashes) => hashes.filter((x) => x === held.fileHash);
    const round = await h.app.reconcile();
    expect(round).toMatchObject({ checked: 3, orphans: 2, removed: 2, failed: 0 });
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
    for (const kept of [held, young]) {
      expect(await liveRow(kept.fileHash)).toBeDefined();
      expect(await nodePins(h.ipfsUrl, kept.cid)).toBe(true);
    }
    // The next round has nothing left to remove.
    expect(await h.app.reconcile()).toMatchObject({ checked: 1, orphans: 0, removed: 0 });
  });

  it("the same bytes uploaded again while the round asks (an Add about to commit them): they stay", async () => {
    const file = randomBytes(700);
    const orphan = await upload(file);
    await agePin(h.sql, orphan.fileHash, HOUR);
    answer = async (hashes) => {
      // A new Add of the same bytes uploads now, between the round's look and its removal.
      await upload(file);
      return hashes.filter((x) => x !== orphan.fileHash);
    };
    const round = await h.app.reconcile();
    expect(round).toMatchObject({ orphans: 1, removed: 0, failed: 0 });
    expect(await liveRow(orphan.fileHash)).toBeDefined();
    expect(await nodePins(h.ipfsUrl, orphan.cid)).toBe(true);
    answer = async (hashes) => hashes;
  });

  it("asks at most 1000 contents at once", async () => {
    // Inventory rows only (no content on the node): every one is held, so nothing is removed.
    await h.sql.query(`
      insert into storage.pin (cid, file_hash, reason, file_bytes, pinned_at, last_uploaded_at)
      select 'QmBatch' || i, upper(encode(sha256(('batch' || i)::bytea), 'hex')), 'batch', 1,
             now() - interval '1 hour', now() - interval '1 hour'
      from generate_series(1, 1001) as i`);
    try {
      asked.length = 0;
      answer = async (hashes) => hashes;
      const round = await h.app.reconcile();
      expect(round).toMatchObject({ orphans: 0, removed: 0 });
      expect(round.checked).toBeGreaterThan(1001);
      expect(Math.max(...asked)).toBe(1000);
      expect(asked.reduce((a, b) => a + b, 0)).toBe(round.checked);
    } finally {
      await h.sql.query(`delete from storage.pin where reason = 'batch'`);
    }
  });
});

describe.skipIf(REAL_KUBO_URL !== undefined)("an upload racing a removal of the same bytes", () => {
  it("a removal that takes the row's lock during the upload: the upload pins again and records a new row", async () => {
    const file = randomBytes(900);
    const first = await upload(file);
    const remover = new pg.Client({ connectionString: h.db.url });
    await remover.connect();
    try {
      // A removal holds the live row's lock (as remove and the reconciliation do) ...
      await remover.query("begin");
      await remover.query(
        "select id from storage.pin where file_hash = $1 and unpinned_at is null for update",
        [first.fileHash],
      );
      const again = upload(file);
      // ... while the upload of the same bytes, its add done, waits for that lock ...
      await expect
        .poll(async () => {
          const { rows } = await h.sql.query(
            `select count(*)::int as n from pg_stat_activity
             where datname = current_database() and wait_event_type = 'Lock'`,
          );
          return rows[0].n;
        })
        .toBe(1);
      // ... and unpins and records before the upload goes on.
      await create({ url: h.ipfsUrl }).pin.rm(CID.parse(first.cid));
      await remover.query(
        "update storage.pin set unpinned_at = now(), unpin_reason = 'race' where file_hash = $1 and unpinned_at is null",
        [first.fileHash],
      );
      await remover.query("commit");
      expect(await again).toEqual(first);
    } finally {
      await remover.end();
    }
    expect(await nodePins(h.ipfsUrl, first.cid)).toBe(true);
    const rows = (await pinRows(h.sql)).filter((r) => r.file_hash === first.fileHash);
    expect(rows.map((r) => r.unpin_reason)).toEqual(["race", null]);
  });
});

describe("a project's removal (storage.content.remove) and an Add of the same bytes under way", () => {
  it("content uploaded once is removed at once; content uploaded again within the grace period stays", async () => {
    const once = await upload();
    expect(
      await h.client.call(StorageRpc.remove, { fileHash: once.fileHash, reason: "project:1:delete" }),
    ).toBe(true);
    expect(await nodePins(h.ipfsUrl, once.cid)).toBe(false);

    // Project A's content is uploaded again by B's Add, which has not committed when A is deleted.
    const bytes = randomBytes(500);
    const first = await upload(bytes);
    await agePin(h.sql, first.fileHash, HOUR); // A's upload, long ago
    await upload(bytes); // B's, just now
    expect(
      await h.client.call(StorageRpc.remove, { fileHash: first.fileHash, reason: "project:2:delete" }),
    ).toBe(false);
    expect(await liveRow(first.fileHash)).toBeDefined();
    expect(await nodePins(h.ipfsUrl, first.cid)).toBe(true);
  });
});
