import { randomBytes } from "node:crypto";
import { fileHashOf, KUBO_ADD_OPTIONS } from "@fundraise/ipfs";
import { kuboDirectoryCidOf } from "@fundraise/ipfs-node";
import { ProjectsRpc, StorageEvents } from "@fundraise/protocol";
import { create } from "kubo-rpc-client";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Harness,
  nodePins,
  outboxPayloads,
  REAL_KUBO_URL,
  startHarness,
  storeContent,
} from "../test/harness.ts";
import { ADOPTED_REASON } from "./reconcile.ts";

// The same bytes recorded by several writers at once: uploads of one file (six Adds of the same
// whitepaper), and an upload meeting the adoption of its own pin. The inventory keeps one live row per
// fileHash (the partial unique index `pin_live_file_hash`); a writer whose insert meets another's row must
// take that row, never fail. The node is OUR KUBO-RPC STAND-IN (packages/ipfs-node, not Kubo) unless
// IPFS_API_URL names a Kubo; `projects.content.held` is answered by the test client IN PLACE OF THE
// PROJECTS SERVICE (everything is held: no round removes anything here).
const GRACE = 900_000; // ORPHAN_GRACE_MS's default
const ROUNDS = 50;
const AT_ONCE = 6;
let now = Date.now();
let h: Harness;
beforeAll(async () => {
  h = await startHarness("concurrent", {}, () => now);
  await h.client.serve(ProjectsRpc.heldContent, async ({ fileHashes }) => fileHashes);
});
afterAll(async () => h?.stop());

/** Every inventory row of this content, oldest first. */
async function rowsOf(fileHash: string) {
  const { rows } = await h.sql.query<{
    reason: string;
    unpinned_at: Date | null;
    pinned_at: Date;
    last_uploaded_at: Date;
  }>(
    `select reason, unpinned_at, pinned_at, last_uploaded_at from storage.pin where file_hash = $1 order by id`,
    [fileHash],
  );
  return rows;
}

/**
 * Another writer's live row for this content, inserted and not committed yet: a writer that looks now
 * finds no live row, and its own insert waits on the unique index until `commit`.
 */
async function uncommittedLiveRow(cid: string, reason: string) {
  const other = new pg.Client({ connectionString: h.db.url });
  await other.connect();
  await other.query("begin");
  await other.query(`insert into storage.pin (cid, file_hash, reason, file_bytes) values ($1, $2, $3, 1)`, [
    cid,
    fileHashOf(cid),
    reason,
  ]);
  let ended = false;
  const end = async () => {
    if (ended) return;
    ended = true;
    await other.end().catch(() => undefined);
  };
  return {
    async commit() {
      await other.query("commit");
      await end();
    },
    end,
  };
}

/** Waits until one statement of this database waits for a lock (a writer's insert, on the index). */
async function oneWaitsForALock() {
  await expect
    .poll(async () => {
      const { rows } = await h.sql.query(
        `select count(*)::int as n from pg_stat_activity
         where datname = current_database() and wait_event_type = 'Lock'`,
      );
      return rows[0].n;
    })
    .toBe(1);
}

describe("uploads of the same new bytes at once", () => {
  it(`${AT_ONCE} at once, ${ROUNDS} rounds: each answers the same, one live row, one pinned event, pinned`, async () => {
    const failures: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const file = randomBytes(300);
      const image = randomBytes(200);
      const results = await Promise.allSettled(
        Array.from({ length: AT_ONCE }, (_, i) =>
          storeContent(h, { file, image, reason: `project:add ${round}.${i}` }),
        ),
      );
      const expected = await kuboDirectoryCidOf({ whitepaper: file, image });
      const fileHash = fileHashOf(expected);
      for (const r of results) {
        if (r.status === "rejected") {
          failures.push(`round ${round}: ${String(r.reason)}`);
          continue;
        }
        expect(r.value).toEqual({ cid: expected.toString(), fileHash, imagePath: `/ipfs/${expected}/image` });
      }
      const rows = await rowsOf(fileHash);
      expect(rows, `round ${round}`).toHaveLength(1);
      expect(rows[0]?.unpinned_at).toBeNull();
      const pinned = await outboxPayloads(h.sql, StorageEvents.pinned);
      expect(pinned.filter((p) => p.fileHash === fileHash)).toHaveLength(1);
      expect(await nodePins(h.ipfsUrl, expected.toString())).toBe(true);
    }
    expect(failures, `${failures.length} of ${ROUNDS * AT_ONCE} uploads failed`).toEqual([]);
  });

  it("an upload whose insert meets another's row of the same bytes takes that row once it commits", async () => {
    const file = randomBytes(400);
    const cid = (await kuboDirectoryCidOf({ whitepaper: file })).toString();
    const other = await uncommittedLiveRow(cid, "the other upload");
    try {
      const upload = storeContent(h, { file, image: null, reason: "this upload" });
      upload.catch(() => undefined); // awaited below, once the other writer has committed
      await oneWaitsForALock();
      await other.commit();
      expect(await upload).toEqual({ cid, fileHash: fileHashOf(cid), imagePath: null });
    } finally {
      await other.end();
    }
    // One live row, the first writer's, made young again by this upload (an upload after its pinning).
    const rows = await rowsOf(fileHashOf(cid));
    expect(rows).toMatchObject([{ reason: "the other upload", unpinned_at: null }]);
    expect(rows[0]?.last_uploaded_at.getTime()).toBeGreaterThan(rows[0]?.pinned_at.getTime() ?? Infinity);
    expect(await nodePins(h.ipfsUrl, cid)).toBe(true);
    // The row was the other writer's: this upload announced nothing.
    const pinned = await outboxPayloads(h.sql, StorageEvents.pinned);
    expect(pinned.filter((p) => p.fileHash === fileHashOf(cid))).toEqual([]);
  });
});

describe.skipIf(REAL_KUBO_URL !== undefined)("an adoption and an upload of the same content", () => {
  it("the adoption whose insert meets the upload's row answers false; the round is not skipped", async () => {
    // Pinned on the node without a row (an upload between its add and its record looks the same) ...
    const node = create({ url: h.ipfsUrl });
    const whitepaper = randomBytes(500);
    let cid = "";
    for await (const entry of node.addAll([{ path: "whitepaper", content: whitepaper }], {
      ...KUBO_ADD_OPTIONS,
      pin: true,
      wrapWithDirectory: true,
    })) {
      if (entry.path === "") cid = entry.cid.toString();
    }
    expect(await h.app.reconcile()).toMatchObject({ adopted: 0 });
    now += GRACE;
    // ... still unrecorded a grace period later, when the upload's record inserts its row at last.
    const upload = await uncommittedLiveRow(cid, "project:add");
    try {
      const round = h.app.reconcile();
      await oneWaitsForALock();
      await upload.commit();
      const figures = await round;
      expect(figures).toMatchObject({ adopted: 0, failed: 0 });
      expect(figures.skipped).toBeUndefined();
    } finally {
      await upload.end();
    }
    expect(await rowsOf(fileHashOf(cid))).toMatchObject([{ reason: "project:add", unpinned_at: null }]);
    expect(await nodePins(h.ipfsUrl, cid)).toBe(true);
    const pinned = await outboxPayloads(h.sql, StorageEvents.pinned);
    expect(pinned.filter((p) => p.reason === ADOPTED_REASON && p.cid === cid)).toEqual([]);
  });
});
