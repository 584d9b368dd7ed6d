import { randomBytes, randomUUID } from "node:crypto";
import { fileHashOf } from "@fundraise/ipfs";
import { ProjectsEvents, StorageEvents } from "@fundraise/protocol";
import { create } from "kubo-rpc-client";
import { CID } from "multiformats/cid";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONSUMER } from "../content/content.service.ts";
import {
  addContent,
  addWhitepaper,
  drained,
  type Harness,
  nodePins,
  outboxPayloads,
  pinRows,
  publish,
  REAL_KUBO_URL,
  receivedEvent,
  startHarness,
  takenOf,
} from "../test/harness.ts";

// The storage service consuming the projects service's content events (ADR 0023, 0027), on RabbitMQ and
// Postgres, with OUR KUBO-RPC STAND-IN (packages/ipfs-node, not Kubo) unless IPFS_API_URL names a Kubo.
// The releases are answered by A STAND-IN FOR THE PROJECTS SERVICE (test/projects-stand-in.ts).
let h: Harness;
beforeAll(async () => {
  h = await startHarness("events");
});
afterAll(async () => h?.stop());

const rowsOf = async (fileHash: string) => (await pinRows(h.sql)).filter((r) => r.file_hash === fileHash);
const eventsOf = async (event: typeof StorageEvents.pinned, fileHash: string) =>
  (await outboxPayloads(h.sql, event)).filter((e) => e.fileHash === fileHash);

/** Waits until storage has handled what was published so far of both events. */
async function handled() {
  await drained(h, ProjectsEvents.contentTaken);
  await drained(h, ProjectsEvents.contentDropped);
}

describe("projects.content.taken", () => {
  it("records the live row and emits storage.content.pinned; storage itself pins nothing", async () => {
    // Added unpinned here, to show that recording does not pin.
    const content = { file: new Uint8Array(randomBytes(3)), image: new Uint8Array([4]) };
    const ref = (await addContent(h.ipfsUrl, content, false))!;
    const added = { ...ref, fileHash: fileHashOf(ref.cid) };
    await publish(h, ProjectsEvents.contentTaken, takenOf(added, 7, "project:add"));
    const pinned = await receivedEvent(h, StorageEvents.pinned, { fileHash: added.fileHash });
    expect(pinned).toEqual({ fileHash: added.fileHash, cid: added.cid, reason: "project:add" });
    expect(await rowsOf(added.fileHash)).toEqual([
      {
        cid: added.cid,
        file_hash: added.fileHash,
        reason: "project:add",
        file_bytes: 3,
        image_bytes: 1,
        unpinned_at: null,
        unpin_reason: null,
      },
    ]);
    // The gateway pins; storage only records (the sweep pins again what the node lacks).
    expect(await nodePins(h.ipfsUrl, added.cid)).toBe(false);
  });

  it("a redelivery, and another message of content already live: one row, one pinned event", async () => {
    const added = await addWhitepaper(h.ipfsUrl);
    const messageId = randomUUID();
    await publish(h, ProjectsEvents.contentTaken, takenOf(added), messageId);
    await publish(h, ProjectsEvents.contentTaken, takenOf(added), messageId);
    await handled();
    // Published once the content is live: deliveries of one queue are handled several at a time, so one
    // published with the two above could be recorded first (two at once: concurrent-records.int.test.ts).
    await publish(h, ProjectsEvents.contentTaken, takenOf(added, 2, "project:2:update"));
    await handled();
    expect(await rowsOf(added.fileHash)).toMatchObject([{ reason: "project:add", unpinned_at: null }]);
    expect(await eventsOf(StorageEvents.pinned, added.fileHash)).toHaveLength(1);
    const { rows } = await h.sql.query(
      "select count(*)::int as n from storage.processed_message where consumer = $1 and message_key = $2",
      [CONSUMER, messageId],
    );
    expect(rows[0].n).toBe(1);
  });

  it("sizes the event does not know are recorded as null", async () => {
    const added = await addWhitepaper(h.ipfsUrl);
    await publish(h, ProjectsEvents.contentTaken, { ...takenOf(added), fileBytes: null });
    await handled();
    expect(await rowsOf(added.fileHash)).toMatchObject([{ file_bytes: null, image_bytes: null }]);
  });
});

describe("projects.content.dropped", () => {
  it("released and unpinned on the node, the row marked, storage.content.unpinned emitted", async () => {
    const added = await addWhitepaper(h.ipfsUrl);
    await publish(h, ProjectsEvents.contentTaken, takenOf(added, 11));
    await handled();
    await publish(h, ProjectsEvents.contentDropped, {
      projectId: 11,
      fileHash: added.fileHash,
      reason: "project:11:deleted",
    });
    await receivedEvent(h, StorageEvents.unpinned, { fileHash: added.fileHash });
    expect(await nodePins(h.ipfsUrl, added.cid)).toBe(false);
    const [row] = await rowsOf(added.fileHash);
    expect(row?.unpinned_at).toBeInstanceOf(Date);
    expect(row?.unpin_reason).toBe("project:11:deleted");
    expect(await eventsOf(StorageEvents.unpinned, added.fileHash)).toEqual([
      { fileHash: added.fileHash, cid: added.cid, reason: "project:11:deleted" },
    ]);
    // Asked of the projects service first, confirmed after the unpin.
    const release = h.projects.released.find((r) => r.fileHash === added.fileHash);
    expect(release?.reason).toBe("storage:project:11:deleted");
    expect(h.projects.confirmed).toContainEqual({ fileHash: added.fileHash, version: release?.version });
  });

  it("content a project holds (taken again meanwhile) stays pinned and live", async () => {
    const added = await addWhitepaper(h.ipfsUrl);
    await publish(h, ProjectsEvents.contentTaken, takenOf(added, 12));
    h.projects.held.add(added.fileHash);
    await publish(h, ProjectsEvents.contentDropped, {
      projectId: 12,
      fileHash: added.fileHash,
      reason: "project:12:file-replaced",
    });
    await handled();
    expect(await nodePins(h.ipfsUrl, added.cid)).toBe(true);
    expect(await rowsOf(added.fileHash)).toMatchObject([{ unpinned_at: null }]);
    expect(await eventsOf(StorageEvents.unpinned, added.fileHash)).toEqual([]);
    expect(h.projects.released.filter((r) => r.fileHash === added.fileHash)).toEqual([]);
  });

  it.skipIf(REAL_KUBO_URL !== undefined)(
    "a take of the same content during the drop's unpin waits for it, then records a new live row",
    async () => {
      const added = await addWhitepaper(h.ipfsUrl);
      await publish(h, ProjectsEvents.contentTaken, takenOf(added, 13));
      await handled();
      // After the unpin, before storage marks the row: the gateway pins the same bytes again for another
      // project's write, which commits and announces them.
      h.projects.beforeConfirm = async () => {
        h.projects.beforeConfirm = undefined;
        await create({ url: h.ipfsUrl }).pin.add(CID.parse(added.cid));
        await publish(h, ProjectsEvents.contentTaken, takenOf(added, 14, "project:add 14"));
        await expect.poll(locksAwaited, { timeout: 10_000 }).toBe(1);
      };
      await publish(h, ProjectsEvents.contentDropped, {
        projectId: 13,
        fileHash: added.fileHash,
        reason: "project:13:deleted",
      });
      await expect.poll(async () => (await rowsOf(added.fileHash)).length, { timeout: 10_000 }).toBe(2);
      await handled();
      expect(await rowsOf(added.fileHash)).toMatchObject([
        { reason: "project:add", unpin_reason: "project:13:deleted" },
        { reason: "project:add 14", unpinned_at: null },
      ]);
      expect(await nodePins(h.ipfsUrl, added.cid)).toBe(true);
    },
  );

  it("the projects service not running: retried later, then released and unpinned", async () => {
    const added = await addWhitepaper(h.ipfsUrl);
    await publish(h, ProjectsEvents.contentTaken, takenOf(added, 15));
    await handled();
    await h.projects.stop();
    try {
      await publish(h, ProjectsEvents.contentDropped, {
        projectId: 15,
        fileHash: added.fileHash,
        reason: "project:15:deleted",
      });
      // An attempt failed: the message waits in one of the subscription's retry queues (1 s, 2 s, 4 s, 8 s
      // before it is dead-lettered). One look at every queue at once: three looks, a second or more each on
      // a busy machine, missed it as it moved from one retry queue to the next.
      const queue = `${CONSUMER}.${ProjectsEvents.contentDropped.name}`;
      const waiting = async () => {
        const counts = await h.vhost.allQueueCounts();
        return [1000, 2000, 4000, 8000].reduce(
          (ready, ms) => ready + (counts.get(`${queue}.retry.${ms}ms`)?.ready ?? 0),
          0,
        );
      };
      await expect.poll(waiting, { timeout: 15_000, interval: 50 }).toBe(1);
      expect(await nodePins(h.ipfsUrl, added.cid)).toBe(true);
      expect(await rowsOf(added.fileHash)).toMatchObject([{ unpinned_at: null }]);
    } finally {
      await h.projects.start();
    }
    await receivedEvent(h, StorageEvents.unpinned, { fileHash: added.fileHash });
    expect(await nodePins(h.ipfsUrl, added.cid)).toBe(false);
    expect(await rowsOf(added.fileHash)).toMatchObject([{ unpin_reason: "project:15:deleted" }]);
  });
});

/** Statements of the test database waiting for a lock (a take waiting for the drop's row lock). */
async function locksAwaited() {
  const { rows } = await h.sql.query(
    `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
  );
  return rows[0].n;
}
