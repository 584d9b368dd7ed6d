import { randomBytes } from "node:crypto";
import { fileHashOf, KUBO_ADD_OPTIONS } from "@fundraise/ipfs";
import { ProjectsEvents, StorageEvents } from "@fundraise/protocol";
import { create } from "kubo-rpc-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  drained,
  type Harness,
  nodePins,
  outboxPayloads,
  pinRows,
  publish,
  startHarness,
  takenOf,
} from "../test/harness.ts";
import { RECORDED_REASON, UNRECORDED_REASON } from "./reconcile.ts";

// Part b of the reconciliation round: content the node pins with no live row (a refused write's pin, a
// gateway stopped between its pinned add and the projects service's write, an inventory reset). The node
// is OUR KUBO-RPC STAND-IN (packages/ipfs-node, not Kubo) unless IPFS_API_URL names a Kubo; the releases
// are answered by A STAND-IN FOR THE PROJECTS SERVICE (test/projects-stand-in.ts). The grace periods run
// on a clock the test moves.
const GRACE = 900_000; // ORPHAN_GRACE_MS's default
let now = Date.now();
let h: Harness;
beforeAll(async () => {
  h = await startHarness("unrecorded", {}, () => now);
});
afterAll(async () => h?.stop());

/** Puts content on the node directly, pinned, as the gateway's add does, and records nothing. */
async function pinOnNodeOnly(
  files: { path: string; content: Uint8Array }[],
  options: { wrap?: boolean; cidVersion?: 0 | 1 } = {},
): Promise<string> {
  const wrap = options.wrap ?? true;
  const node = create({ url: h.ipfsUrl });
  let root = "";
  for await (const entry of node.addAll(files, {
    ...KUBO_ADD_OPTIONS,
    cidVersion: options.cidVersion ?? 0,
    pin: true,
    wrapWithDirectory: wrap,
  })) {
    if (entry.path === "" || !wrap) root = entry.cid.toString();
  }
  return root;
}
const project = () => pinOnNodeOnly([{ path: "whitepaper", content: randomBytes(700) }]);
const rowsOf = async (fileHash: string) => (await pinRows(h.sql)).filter((r) => r.file_hash === fileHash);

describe("content pinned without a live row", () => {
  it("after a grace period: unpinned when no project holds it, recorded when one does; other shapes untouched", async () => {
    const orphan = await pinOnNodeOnly([
      { path: "whitepaper", content: randomBytes(700) },
      { path: "image", content: randomBytes(300) },
    ]);
    const held = await project();
    const bareFile = await pinOnNodeOnly([{ path: "notes.txt", content: randomBytes(100) }], { wrap: false });
    const cidV1 = await pinOnNodeOnly([{ path: "whitepaper", content: randomBytes(100) }], { cidVersion: 1 });
    h.projects.held.add(fileHashOf(held));

    // First seen: remembered only (a write between the gateway's add and its commit looks the same).
    expect(await h.app.reconcile()).toMatchObject({ orphans: 0, removed: 0, recorded: 0 });
    const young = await project();
    now += GRACE;
    const round = await h.app.reconcile();
    expect(round).toMatchObject({ orphans: 2, removed: 1, recorded: 1, failed: 0, repinned: 0, missing: 0 });
    expect(round.skipped).toBeUndefined();

    expect(await nodePins(h.ipfsUrl, orphan)).toBe(false);
    expect(await rowsOf(fileHashOf(orphan))).toEqual([]);
    expect(h.projects.released.find((r) => r.fileHash === fileHashOf(orphan))?.reason).toBe(
      `storage:${UNRECORDED_REASON}`,
    );

    expect(await nodePins(h.ipfsUrl, held)).toBe(true);
    expect(await rowsOf(fileHashOf(held))).toMatchObject([
      { cid: held, reason: RECORDED_REASON, file_bytes: null, image_bytes: null, unpinned_at: null },
    ]);
    expect(await outboxPayloads(h.sql, StorageEvents.pinned)).toContainEqual({
      fileHash: fileHashOf(held),
      cid: held,
      reason: RECORDED_REASON,
    });

    // Not a project's shape (a bare file; a CIDv1): never asked about, never touched.
    for (const foreign of [bareFile, cidV1]) expect(await nodePins(h.ipfsUrl, foreign)).toBe(true);
    expect(h.projects.released.map((r) => r.fileHash)).toEqual([fileHashOf(orphan)]);

    // Seen a round later than the others: still inside its grace period, then gone.
    expect(await nodePins(h.ipfsUrl, young)).toBe(true);
    now += GRACE;
    expect(await h.app.reconcile()).toMatchObject({ orphans: 1, removed: 1, recorded: 0 });
    expect(await nodePins(h.ipfsUrl, young)).toBe(false);
    for (const foreign of [bareFile, cidV1]) expect(await nodePins(h.ipfsUrl, foreign)).toBe(true);
  });

  it("content the projects service announces in between is left to its record", async () => {
    const whitepaper = randomBytes(900);
    const cid = await pinOnNodeOnly([{ path: "whitepaper", content: whitepaper }]);
    const fileHash = fileHashOf(cid);
    expect(await h.app.reconcile()).toMatchObject({ removed: 0 });
    // The write the pin belonged to commits after all; its event records the content.
    await publish(
      h,
      ProjectsEvents.contentTaken,
      takenOf({ cid, fileHash, fileBytes: 900, imageBytes: null }),
    );
    await drained(h, ProjectsEvents.contentTaken);
    h.projects.held.add(fileHash);
    now += GRACE;
    expect(await h.app.reconcile()).toMatchObject({ orphans: 0, removed: 0, recorded: 0 });
    expect(await rowsOf(fileHash)).toMatchObject([{ reason: "project:add", unpinned_at: null }]);
    expect(await nodePins(h.ipfsUrl, cid)).toBe(true);
  });
});
