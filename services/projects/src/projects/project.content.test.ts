import { testMessageContext } from "@fundraise/bus/testing";
import { describe, expect, it } from "vitest";
import { projectsOnMemory, projectWrite } from "../test/memory-projects.ts";
import { createContentReleases } from "./project.content.ts";

// The release rule (protocol's content-release.ts, ADR 0027) on the in-memory repository: content is
// released only while no project holds it, and a write that takes released content waits until every
// release of it is over and the gateway pinned it again.

const ctx = () => testMessageContext();

function setup() {
  const h = projectsOnMemory();
  return { ...h, releases: createContentReleases({ projects: h.projects }) };
}

describe("content releases", () => {
  it("held content is never released; content no project holds is, with a new version each time", async () => {
    const h = setup();
    const owner = h.person();
    const held = await h.service.add(owner, projectWrite("Held", { file: "held" }), ctx());
    const free = projectWrite("Free", { file: "free" });
    const freeHash = (await h.service.add(owner, free, ctx())).fileHash;
    await h.service.delete(owner, (await h.service.list(owner)).at(-1)?.projectID ?? 0, ctx());
    const first = await h.releases.release([held.fileHash, freeHash], "test");
    expect(first.held).toEqual([held.fileHash]);
    expect(first.released).toEqual([{ fileHash: freeHash, version: 1 }]);
    const second = await h.releases.release([freeHash], "test");
    expect(second.released).toEqual([{ fileHash: freeHash, version: 2 }]);
  });

  it("a write of released content: wait while an unpin may land, then pin again and write with its version", async () => {
    const h = setup();
    const owner = h.person();
    const write = projectWrite("Again", { file: "bytes" });
    const first = await h.service.add(owner, write, ctx());
    await h.service.delete(owner, first.projectID, ctx());
    const { released } = await h.releases.release([first.fileHash], "storage:deleted");
    const version = released[0]?.version ?? 0;
    // Not confirmed: an unpin may still land, so the gateway waits (no pin yet).
    const waiting = await h.service.add(owner, write, ctx()).catch((e: unknown) => e);
    expect(waiting).toMatchObject({ code: "CONTENT_RELEASED", kind: "unavailable", retryable: true });
    expect((waiting as { details: { waitMs: number } }).details).toMatchObject({ version });
    expect((waiting as { details: { waitMs: number } }).details.waitMs).toBeGreaterThan(5_000);
    // Confirmed: over; the gateway pins again and says so.
    await h.releases.confirm(released);
    await expect(h.service.add(owner, write, ctx())).rejects.toMatchObject({
      code: "CONTENT_RELEASED",
      details: { version, waitMs: 0 },
    });
    const content = write.content && { ...write.content, repinnedAfter: version };
    const made = await h.service.add(owner, { ...write, content }, ctx());
    expect(made.fileHash).toBe(first.fileHash);
    // Held now: a release answers it held, and nothing can unpin it.
    expect(await h.releases.release([first.fileHash], "late sweep")).toEqual({
      released: [],
      held: [first.fileHash],
    });
  });

  it("a release after the gateway's second pin refuses the write again", async () => {
    const h = setup();
    const owner = h.person();
    const write = projectWrite("Twice", { file: "twice" });
    const first = await h.service.add(owner, write, ctx());
    await h.service.delete(owner, first.projectID, ctx());
    const one = await h.releases.release([first.fileHash], "one");
    await h.releases.confirm(one.released);
    const two = await h.releases.release([first.fileHash], "two");
    const content = write.content && { ...write.content, repinnedAfter: one.released[0]?.version ?? 0 };
    await expect(h.service.add(owner, { ...write, content }, ctx())).rejects.toMatchObject({
      code: "CONTENT_RELEASED",
      details: { version: two.released[0]?.version },
    });
  });

  it("an Update that takes released content waits as an Add does; the file it replaces is let go", async () => {
    const h = setup();
    const owner = h.person();
    const gone = await h.service.add(owner, projectWrite("Gone", { file: "old-bytes" }), ctx());
    await h.service.delete(owner, gone.projectID, ctx());
    await h.releases.release([gone.fileHash], "storage:deleted");
    const kept = await h.service.add(owner, projectWrite("Kept", { file: "kept" }), ctx());
    const update = projectWrite("Kept", { id: kept.projectID, file: "old-bytes" });
    await expect(h.service.update(owner, update, ctx())).rejects.toMatchObject({ code: "CONTENT_RELEASED" });
    expect(h.content.dropped).toEqual([gone.fileHash]);
  });

  it("a pin older than releases are remembered for is refused; a version the projects service never gave too", async () => {
    const h = setup();
    const owner = h.person();
    const write = projectWrite("Stale", { file: "stale" });
    const stale = write.content && { ...write.content, pinnedAt: Date.now() - 11 * 60_000 };
    await expect(h.service.add(owner, { ...write, content: stale }, ctx())).rejects.toMatchObject({
      code: "CONTENT_PIN_STALE",
      kind: "unavailable",
    });
    const fresh = write.content && { ...write.content, pinnedAt: Date.now() };
    const made = await h.service.add(owner, { ...write, content: fresh }, ctx());
    await h.service.delete(owner, made.projectID, ctx());
    const { released } = await h.releases.release([made.fileHash], "storage:deleted");
    await h.releases.confirm(released);
    const version = released[0]?.version ?? 0;
    const ahead = write.content && { ...write.content, repinnedAfter: version + 5 };
    await expect(h.service.add(owner, { ...write, content: ahead }, ctx())).rejects.toMatchObject({
      code: "CONTENT_RELEASED",
      details: { version, waitMs: 0 },
    });
  });
});
