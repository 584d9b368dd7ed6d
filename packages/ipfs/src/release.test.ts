import { randomBytes } from "node:crypto";
import type { CID } from "multiformats/cid";
import { describe, expect, it } from "vitest";
import { cidOfFileHash } from "./file-hash.ts";
import { type Release, type Releaser, releaseAndUnpin } from "./release.ts";

// The one way content is unpinned (ADR 0027), with the projects service's side and the node in memory:
// what is released and unpinned, what is held, and what is left for the sweep.

const newHash = () => randomBytes(32).toString("hex").toUpperCase();

/** A node in memory: pinned CIDs; unpins of `failing` fail; every unpin's window recorded. */
function memoryNode(pinned: string[]) {
  const pins = new Set(pinned.map((hash) => cidOfFileHash(hash).toString()));
  const failing = new Set<string>();
  const windows: number[] = [];
  return {
    pins,
    failing,
    windows,
    async unpin(cid: CID, options?: { timeoutMs?: number }) {
      windows.push(options?.timeoutMs ?? Number.NaN);
      if (failing.has(cid.toString())) throw new Error("IPFS unavailable");
      return pins.delete(cid.toString());
    },
  };
}

/** The projects service's side: `held` are held, the others released in order; `confirmed` logged. */
function memoryReleaser(held: string[], options: { delayMs?: number; confirmFails?: boolean } = {}) {
  const confirmed: Release[] = [];
  const asked: { fileHashes: string[]; reason: string }[] = [];
  let version = 0;
  const releaser: Releaser = {
    async release(fileHashes, reason) {
      asked.push({ fileHashes, reason });
      if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
      return {
        held: fileHashes.filter((hash) => held.includes(hash)),
        released: fileHashes
          .filter((hash) => !held.includes(hash))
          .map((fileHash) => ({ fileHash, version: ++version })),
      };
    },
    async confirm(releases) {
      if (options.confirmFails) throw new Error("projects service unavailable");
      confirmed.push(...releases);
    },
  };
  return { releaser, confirmed, asked };
}

describe("releaseAndUnpin", () => {
  it("unpins what the projects service released, leaves what it holds, and confirms the unpins done", async () => {
    const [free, held] = [newHash(), newHash()];
    const node = memoryNode([free, held]);
    const side = memoryReleaser([held]);
    const outcome = await releaseAndUnpin(
      { ipfs: node, releaser: side.releaser },
      [free, held],
      "project:1:deleted",
    );
    expect(outcome).toEqual({ unpinned: [free], held: [held], late: [], failed: [] });
    expect(node.pins.has(cidOfFileHash(free).toString())).toBe(false);
    expect(node.pins.has(cidOfFileHash(held).toString())).toBe(true);
    expect(side.asked).toEqual([{ fileHashes: [free, held], reason: "project:1:deleted" }]);
    expect(side.confirmed).toEqual([{ fileHash: free, version: 1 }]);
  });

  it("content not pinned any more counts as unpinned", async () => {
    const hash = newHash();
    const side = memoryReleaser([]);
    const outcome = await releaseAndUnpin(
      { ipfs: memoryNode([]), releaser: side.releaser },
      [hash],
      "gateway:refused",
    );
    expect(outcome.unpinned).toEqual([hash]);
    expect(side.confirmed).toEqual([{ fileHash: hash, version: 1 }]);
  });

  it("an unpin that fails is reported, not thrown, and not confirmed; the others go on", async () => {
    const [bad, good] = [newHash(), newHash()];
    const node = memoryNode([bad, good]);
    node.failing.add(cidOfFileHash(bad).toString());
    const side = memoryReleaser([]);
    const outcome = await releaseAndUnpin({ ipfs: node, releaser: side.releaser }, [bad, good], "sweep");
    expect(outcome).toEqual({ unpinned: [good], held: [], late: [], failed: [bad] });
    expect(side.confirmed.map((r) => r.fileHash)).toEqual([good]);
  });

  it("each unpin is cut at the window's end, less a second; none starts once the window is over", async () => {
    const hash = newHash();
    const node = memoryNode([hash]);
    const outcome = await releaseAndUnpin(
      { ipfs: node, releaser: memoryReleaser([]).releaser, windowMs: 10_000 },
      [hash],
      "sweep",
    );
    expect(outcome.unpinned).toEqual([hash]);
    expect(node.windows[0]).toBeGreaterThan(8_000);
    expect(node.windows[0]).toBeLessThanOrEqual(9_000);

    // The answer came after the window (less its second) had passed: nothing is unpinned.
    const late = memoryNode([hash]);
    const slow = memoryReleaser([], { delayMs: 30 });
    const lateOutcome = await releaseAndUnpin(
      { ipfs: late, releaser: slow.releaser, windowMs: 1_020 },
      [hash],
      "sweep",
    );
    expect(lateOutcome).toEqual({ unpinned: [], held: [], late: [hash], failed: [] });
    expect(late.windows).toEqual([]);
    expect(slow.confirmed).toEqual([]);
  });

  it("a release the projects service does not answer throws, and nothing is unpinned", async () => {
    const hash = newHash();
    const node = memoryNode([hash]);
    const releaser: Releaser = {
      release: async () => {
        throw new Error("projects service unavailable");
      },
      confirm: async () => undefined,
    };
    await expect(releaseAndUnpin({ ipfs: node, releaser }, [hash], "sweep")).rejects.toThrow("unavailable");
    expect(node.pins.size).toBe(1);
  });

  it("a confirmation lost is not a failure: the unpins stand", async () => {
    const hash = newHash();
    const side = memoryReleaser([], { confirmFails: true });
    const outcome = await releaseAndUnpin(
      { ipfs: memoryNode([hash]), releaser: side.releaser },
      [hash],
      "sweep",
    );
    expect(outcome.unpinned).toEqual([hash]);
  });

  it("nothing to release asks nothing", async () => {
    const side = memoryReleaser([]);
    expect(await releaseAndUnpin({ ipfs: memoryNode([]), releaser: side.releaser }, [], "sweep")).toEqual({
      unpinned: [],
      held: [],
      late: [],
      failed: [],
    });
    expect(side.asked).toEqual([]);
  });
});
