import { randomBytes, randomUUID } from "node:crypto";
import { fileHashOf, KUBO_ADD_OPTIONS } from "@fundraise/ipfs";
import { kuboDirectoryCidOf } from "@fundraise/ipfs-node";
import { ProjectsEvents, StorageEvents } from "@fundraise/protocol";
import { create } from "kubo-rpc-client";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addContent,
  drained,
  type Harness,
  nodePins,
  outboxPayloads,
  publish,
  REAL_KUBO_URL,
  startHarness,
  takenOf,
} from "../test/harness.ts";
import { CONSUMER } from "./content.service.ts";
import { RECORDED_REASON } from "./reconcile.ts";

// The same content recorded by several writers at once: `taken` events of one content handled side by
// side, and the sweep recording held content while a `taken` of it commits. The inventory keeps one live
// row per fileHash (the partial unique index `pin_live_file_hash`); a writer whose insert meets another's
// row takes the content as recorded, never fails. The node is OUR KUBO-RPC STAND-IN (packages/ipfs-node,
// not Kubo) unless IPFS_API_URL names a Kubo; releases are answered by A STAND-IN FOR THE PROJECTS SERVICE.
const GRACE = 900_000; // ORPHAN_GRACE_MS's default
// Each round publishes AT_ONCE takens of one new content at once; the service handles them side by side
// (prefetch 10), so every round has AT_ONCE writers racing for the same row of the unique index within a
// few milliseconds: each round is the contended case, not a lucky one. What catches a regression is per
// round (one live row, one pinned event) and at the end (no delivery waits for a retry or lies
// dead-lettered). The one interleaving that broke before (an insert meeting another writer's uncommitted
// row) is forced, not hoped for, by the next test. So four rounds (24 racing writes) suffice: more add
// time, not cases; ten took 16 s on a loaded 2-core machine (mostly rabbitmqctl, in `drained`), near the
// 30 s limit every test had. The test's own limit grows with its rounds.
const ROUNDS = 4;
const AT_ONCE = 6;
/**
 * Per round: the content's add, the publishes and the queue's drain, each look at the queue a rabbitmqctl
 * call (5 s a round beside two other files on a loaded machine).
 */
const ROUND_BUDGET_MS = 30_000;
let now = Date.now();
let h: Harness;
beforeAll(async () => {
  h = await startHarness("concurrent", {}, () => now);
});
afterAll(async () => h?.stop());

/** Every inventory row of this content, oldest first. */
async function rowsOf(fileHash: string) {
  const { rows } = await h.sql.query<{ reason: string; unpinned_at: Date | null }>(
    "select reason, unpinned_at from storage.pin where file_hash = $1 order by id",
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
  await other.query("insert into storage.pin (cid, file_hash, reason, file_bytes) values ($1, $2, $3, 1)", [
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

/** Nothing of the `taken` queue failed: no message waits for a retry or lies dead-lettered. */
async function noTakenFailed() {
  const queue = `${CONSUMER}.${ProjectsEvents.contentTaken.name}`;
  for (const name of [`${queue}.retry.1000ms`, `${queue}.dlq`]) {
    expect(await h.vhost.queueCounts(name)).toEqual({ ready: 0, unacknowledged: 0 });
  }
}

describe("taken events of the same content at once", () => {
  it(
    `${AT_ONCE} at once, ${ROUNDS} rounds: one live row, one pinned event each`,
    async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const ref = (await addContent(h.ipfsUrl, { file: randomBytes(300), image: randomBytes(200) }))!;
        const fileHash = fileHashOf(ref.cid);
        await Promise.all(
          Array.from({ length: AT_ONCE }, (_, i) =>
            publish(
              h,
              ProjectsEvents.contentTaken,
              takenOf({ ...ref, fileHash }, i + 1, `project:add ${round}.${i}`),
            ),
          ),
        );
        await drained(h, ProjectsEvents.contentTaken);
        const rows = await rowsOf(fileHash);
        expect(rows, `round ${round}`).toHaveLength(1);
        expect(rows[0]?.unpinned_at).toBeNull();
        const pinned = await outboxPayloads(h.sql, StorageEvents.pinned);
        expect(pinned.filter((p) => p.fileHash === fileHash)).toHaveLength(1);
      }
      await noTakenFailed();
    },
    ROUNDS * ROUND_BUDGET_MS + 20_000,
  );

  it("a taken whose insert meets another's uncommitted row of the same content takes it as recorded", async () => {
    const file = randomBytes(400);
    const cid = (await kuboDirectoryCidOf({ whitepaper: file })).toString();
    const fileHash = fileHashOf(cid);
    const other = await uncommittedLiveRow(cid, "the other writer");
    try {
      await publish(
        h,
        ProjectsEvents.contentTaken,
        takenOf({ cid, fileHash, fileBytes: 400, imageBytes: null }),
        randomUUID(),
      );
      await oneWaitsForALock();
      await other.commit();
    } finally {
      await other.end();
    }
    await drained(h, ProjectsEvents.contentTaken);
    expect(await rowsOf(fileHash)).toMatchObject([{ reason: "the other writer", unpinned_at: null }]);
    // The row was the other writer's: this message announced nothing, and was not retried.
    const pinned = await outboxPayloads(h.sql, StorageEvents.pinned);
    expect(pinned.filter((p) => p.fileHash === fileHash)).toEqual([]);
    await noTakenFailed();
  });
});

describe.skipIf(REAL_KUBO_URL !== undefined)(
  "the sweep recording held content while a taken of it commits",
  () => {
    it("the sweep's insert meets the taken's row: not recorded twice, the round goes on", async () => {
      // Pinned on the node without a row (a write between its add and its commit looks the same) ...
      const node = create({ url: h.ipfsUrl });
      let cid = "";
      for await (const entry of node.addAll([{ path: "whitepaper", content: randomBytes(500) }], {
        ...KUBO_ADD_OPTIONS,
        pin: true,
        wrapWithDirectory: true,
      })) {
        if (entry.path === "") cid = entry.cid.toString();
      }
      const fileHash = fileHashOf(cid);
      expect(await h.app.reconcile()).toMatchObject({ recorded: 0 });
      now += GRACE;
      h.projects.held.add(fileHash);
      // ... still unrecorded a grace period later, when the write's `taken` inserts its row at last.
      const taken = await uncommittedLiveRow(cid, "project:add");
      try {
        const round = h.app.reconcile();
        await oneWaitsForALock();
        await taken.commit();
        const figures = await round;
        expect(figures).toMatchObject({ recorded: 0, removed: 0, failed: 0 });
        expect(figures.skipped).toBeUndefined();
      } finally {
        await taken.end();
      }
      expect(await rowsOf(fileHash)).toMatchObject([{ reason: "project:add", unpinned_at: null }]);
      expect(await nodePins(h.ipfsUrl, cid)).toBe(true);
      const pinned = await outboxPayloads(h.sql, StorageEvents.pinned);
      expect(pinned.filter((p) => p.reason === RECORDED_REASON && p.cid === cid)).toEqual([]);
    });
  },
);
