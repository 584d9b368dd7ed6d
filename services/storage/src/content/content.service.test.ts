import { testMessageContext } from "@fundraise/bus/testing";
import { ErrorCode, ProjectsEvents, StorageEvents } from "@fundraise/protocol";
import { describe, expect, it, vi } from "vitest";
import { type Content, storageOnMemory } from "../test/memory-storage.ts";
import type { ContentTaken } from "./content.service.ts";

// The storage service's content events (ADR 0023, 0027) on memory (test/memory-storage.ts): the inventory
// in memory, AN IN-MEMORY IPFS NODE (not Kubo), A STAND-IN FOR THE PROJECTS SERVICE on the in-memory bus,
// storage's subscriptions on that bus. SQL, row locks under concurrency and RabbitMQ's retries are the
// integration suites' (*.int.test.ts).

type Setup = Awaited<ReturnType<typeof storageOnMemory>>;
const takenOf = (content: Content, projectId = 1, reason = "project:add"): ContentTaken => ({
  projectId,
  fileHash: content.fileHash,
  cid: content.cid,
  fileBytes: 500,
  imageBytes: null,
  reason,
});
const droppedOf = (content: Content, projectId = 1, reason = `project:${projectId}:deleted`) => ({
  projectId,
  fileHash: content.fileHash,
  reason,
});
/** The committed rows of this content, oldest first. */
const rowsOf = (h: Setup, content: Content) =>
  [...h.pins.pins.values()].filter((pin) => pin.fileHash === content.fileHash).sort((a, b) => a.id - b.id);

/** Content the gateway added pinned and a project took (recorded through the bus). */
async function taken(h: Setup, projectId = 1): Promise<Content> {
  const content = h.ipfs.add();
  await h.bus.publish(ProjectsEvents.contentTaken, takenOf(content, projectId));
  return content;
}

describe("projects.content.taken", () => {
  it("records the live row at the inventory's clock and emits storage.content.pinned; it pins nothing", async () => {
    const h = await storageOnMemory();
    const content = h.ipfs.add({ pin: false });
    await h.bus.publish(ProjectsEvents.contentTaken, { ...takenOf(content, 7), imageBytes: 12 });
    expect(rowsOf(h, content)).toMatchObject([
      {
        cid: content.cid,
        reason: "project:add",
        fileBytes: 500,
        imageBytes: 12,
        pinnedAt: h.now(),
        unpinnedAt: null,
        unpinReason: null,
      },
    ]);
    expect(h.eventsNamed(StorageEvents.pinned.name)).toEqual([
      { fileHash: content.fileHash, cid: content.cid, reason: "project:add" },
    ]);
    expect(h.ipfs.calls).toEqual([]);
    expect(h.ipfs.pinned.has(content.cid)).toBe(false);
  });

  it("a redelivery, and another message of content already live: one row, one pinned event", async () => {
    const h = await storageOnMemory();
    const content = h.ipfs.add();
    const markDuplicate = vi.fn();
    const ctx = testMessageContext({ markDuplicate });
    expect(await h.content.taken(takenOf(content), ctx)).toBe(true);
    expect(await h.content.taken(takenOf(content), ctx)).toBe(false);
    expect(markDuplicate).toHaveBeenCalledOnce();
    expect(await h.content.taken(takenOf(content, 2, "project:add 2"), testMessageContext())).toBe(false);
    expect(rowsOf(h, content)).toHaveLength(1);
    expect(h.eventsNamed(StorageEvents.pinned.name)).toHaveLength(1);
  });

  it("a reason longer than the inventory's 200 characters is recorded cut, not refused", async () => {
    const h = await storageOnMemory();
    const content = h.ipfs.add();
    await h.content.taken({ ...takenOf(content), reason: "r".repeat(300) }, testMessageContext());
    expect(rowsOf(h, content)[0]?.reason).toBe("r".repeat(200));
  });
});

describe("projects.content.dropped", () => {
  it("released, unpinned on the node, the row marked, storage.content.unpinned emitted, the release confirmed", async () => {
    const h = await storageOnMemory();
    const content = await taken(h, 11);
    h.tick(5_000);
    await h.bus.publish(ProjectsEvents.contentDropped, droppedOf(content, 11));
    expect(h.ipfs.pinned.has(content.cid)).toBe(false);
    expect(rowsOf(h, content)).toMatchObject([{ unpinnedAt: h.now(), unpinReason: "project:11:deleted" }]);
    expect(h.eventsNamed(StorageEvents.unpinned.name)).toEqual([
      { fileHash: content.fileHash, cid: content.cid, reason: "project:11:deleted" },
    ]);
    // Asked of the projects service first, confirmed after the unpin.
    expect(h.projects.released).toEqual([
      { fileHash: content.fileHash, version: 1, reason: "storage:project:11:deleted" },
    ]);
    expect(h.projects.confirmed).toEqual([{ fileHash: content.fileHash, version: 1 }]);
  });

  it("content a project holds (taken again meanwhile) stays pinned and live; nothing is released", async () => {
    const h = await storageOnMemory();
    const content = await taken(h, 12);
    h.projects.held.add(content.fileHash);
    expect(await h.content.dropped(droppedOf(content, 12), testMessageContext())).toBe("held");
    expect(h.ipfs.pinned.has(content.cid)).toBe(true);
    expect(rowsOf(h, content)).toMatchObject([{ unpinnedAt: null }]);
    expect(h.eventsNamed(StorageEvents.unpinned.name)).toEqual([]);
    expect(h.projects.released).toEqual([]);
    expect(h.ipfs.calls).toEqual([]);
  });

  it("the projects service not answering: a retryable failure, nothing unpinned, and the message comes again", async () => {
    const h = await storageOnMemory();
    const content = await taken(h, 15);
    h.projects.running = false;
    const ctx = testMessageContext();
    await expect(h.content.dropped(droppedOf(content, 15), ctx)).rejects.toMatchObject({
      code: ErrorCode.SERVICE_UNAVAILABLE,
      retryable: true,
    });
    expect(h.ipfs.pinned.has(content.cid)).toBe(true);
    expect(rowsOf(h, content)).toMatchObject([{ unpinnedAt: null }]);
    // The same message again, the projects service back: its claim was rolled back with the failure.
    h.projects.running = true;
    expect(await h.content.dropped(droppedOf(content, 15), ctx)).toBe("unpinned");
    expect(h.ipfs.pinned.has(content.cid)).toBe(false);
    expect(rowsOf(h, content)).toMatchObject([{ unpinReason: "project:15:deleted" }]);
  });

  it("an unpin the node fails is left for the sweep: the row stays live, no event, the message not retried", async () => {
    const h = await storageOnMemory();
    const content = await taken(h, 16);
    h.ipfs.failingUnpins.add(content.cid);
    const ctx = testMessageContext();
    expect(await h.content.dropped(droppedOf(content, 16), ctx)).toBe("failed");
    expect(rowsOf(h, content)).toMatchObject([{ unpinnedAt: null }]);
    expect(h.eventsNamed(StorageEvents.unpinned.name)).toEqual([]);
    // Released but not unpinned: nothing confirmed, so a write of the same content waits for the window.
    expect(h.projects.released).toHaveLength(1);
    expect(h.projects.confirmed).toEqual([]);
    expect(await h.content.dropped(droppedOf(content, 16), ctx)).toBe("duplicate");
  });

  it("a release answered after its window has passed unpins nothing (late), for the sweep", async () => {
    // A window of 1 s leaves nothing once the second kept free at its end is taken off.
    const h = await storageOnMemory({ windowMs: 1_000 });
    const content = await taken(h, 17);
    expect(await h.content.dropped(droppedOf(content, 17), testMessageContext())).toBe("late");
    expect(h.ipfs.pinned.has(content.cid)).toBe(true);
    expect(h.ipfs.calls).toEqual([]);
    expect(rowsOf(h, content)).toMatchObject([{ unpinnedAt: null }]);
  });

  it("content never recorded (a write that never became a project's) is still released and unpinned", async () => {
    const h = await storageOnMemory();
    const content = h.ipfs.add();
    expect(await h.content.dropped(droppedOf(content, 18), testMessageContext())).toBe("unpinned");
    expect(h.ipfs.pinned.has(content.cid)).toBe(false);
    expect(rowsOf(h, content)).toEqual([]);
    expect(h.eventsNamed(StorageEvents.unpinned.name)).toEqual([]);
  });

  it("a take of the same content during the drop's unpin waits for it, records a new live row, and the sweep pins it again", async () => {
    const h = await storageOnMemory();
    const content = await taken(h, 13);
    let take: Promise<boolean> | undefined;
    h.projects.afterRelease = async () => {
      h.projects.afterRelease = undefined;
      take = h.content.taken(takenOf(content, 14, "project:add 14"), testMessageContext());
      // Not recorded while the drop holds the content's row.
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(rowsOf(h, content)).toHaveLength(1);
    };
    expect(await h.content.dropped(droppedOf(content, 13), testMessageContext())).toBe("unpinned");
    expect(await take).toBe(true);
    expect(rowsOf(h, content)).toMatchObject([
      { reason: "project:add", unpinReason: "project:13:deleted" },
      { reason: "project:add 14", unpinnedAt: null },
    ]);
    // The drop unpinned it: the round's part c pins the new live row's content again.
    h.projects.held.add(content.fileHash);
    expect(h.ipfs.pinned.has(content.cid)).toBe(false);
    expect(await h.reconciler.round()).toMatchObject({ repinned: 1, missing: 0 });
    expect(h.ipfs.pinned.has(content.cid)).toBe(true);
  });
});
