import { randomBytes } from "node:crypto";
import { fileHashOf, KUBO_ADD_OPTIONS } from "@fundraise/ipfs";
import { ProjectsRpc, StorageEvents } from "@fundraise/protocol";
import { create } from "kubo-rpc-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  agePin,
  type Harness,
  nodePins,
  outboxPayloads,
  pinRows,
  startHarness,
  storeContent,
} from "../test/harness.ts";
import { ADOPTED_REASON, ORPHAN_REASON } from "./reconcile.ts";

// Content the node pins with no inventory row at all (an upload whose record failed while the database
// could not be read, so its pin was left). The node is OUR KUBO-RPC STAND-IN (packages/ipfs-node, not
// Kubo) unless IPFS_API_URL names a Kubo; `projects.content.held` is answered by the test client IN PLACE
// OF THE PROJECTS SERVICE (no project holds anything here). The grace periods run on a clock the test moves.
const GRACE = 900_000; // ORPHAN_GRACE_MS's default
let now = Date.now();
let h: Harness;
beforeAll(async () => {
  h = await startHarness("unrecorded", {}, () => now);
  await h.client.serve(ProjectsRpc.heldContent, async () => []);
});
afterAll(async () => h?.stop());

/** Puts content on the node directly, as an upload does, and records nothing. */
async function pinOnNodeOnly(files: { path: string; content: Uint8Array }[], wrap = true): Promise<string> {
  const node = create({ url: h.ipfsUrl });
  let root = "";
  for await (const entry of node.addAll(files, { ...KUBO_ADD_OPTIONS, pin: true, wrapWithDirectory: wrap })) {
    if (entry.path === "" || !wrap) root = entry.cid.toString();
  }
  return root;
}

const rowsOf = async (fileHash: string) => (await pinRows(h.sql)).filter((r) => r.file_hash === fileHash);

describe("content pinned without any inventory row", () => {
  it("is recorded once unrecorded for a grace period, then reconciled like any orphan", async () => {
    const project = await pinOnNodeOnly([
      { path: "whitepaper", content: randomBytes(700) },
      { path: "image", content: randomBytes(300) },
    ]);
    const foreignFile = await pinOnNodeOnly([{ path: "notes.txt", content: randomBytes(100) }], false);
    const fileHash = fileHashOf(project);

    // First seen: remembered, nothing recorded yet (an upload between its pin and its record looks the same).
    expect(await h.app.reconcile()).toMatchObject({ adopted: 0 });
    expect(await rowsOf(fileHash)).toEqual([]);

    now += GRACE;
    expect(await h.app.reconcile()).toMatchObject({ adopted: 1 });
    expect(await rowsOf(fileHash)).toMatchObject([{ reason: ADOPTED_REASON, unpinned_at: null }]);
    expect(await nodePins(h.ipfsUrl, project)).toBe(true);
    expect(await outboxPayloads(h.sql, StorageEvents.pinned)).toContainEqual(
      expect.objectContaining({ fileHash, cid: project, reason: ADOPTED_REASON }),
    );
    // A pin of another shape (a bare file, no `whitepaper` entry) is not a project's: never touched.
    expect(await rowsOf(fileHashOf(foreignFile))).toEqual([]);
    expect(await nodePins(h.ipfsUrl, foreignFile)).toBe(true);

    // Recorded, it is an orphan like any other once its grace period is over: unpinned and recorded.
    await agePin(h.sql, fileHash, GRACE + 1);
    expect(await h.app.reconcile()).toMatchObject({ removed: 1 });
    expect(await rowsOf(fileHash)).toMatchObject([{ unpin_reason: ORPHAN_REASON }]);
    expect(await nodePins(h.ipfsUrl, project)).toBe(false);
    expect(await nodePins(h.ipfsUrl, foreignFile)).toBe(true);
  });

  it("leaves content that an upload recorded in between", async () => {
    const whitepaper = randomBytes(900);
    const cid = await pinOnNodeOnly([{ path: "whitepaper", content: whitepaper }]);
    expect(await h.app.reconcile()).toMatchObject({ adopted: 0 });
    // The upload the pin belonged to records it after all (the same bytes: the same directory).
    const uploaded = await storeContent(h, {
      file: whitepaper,
      image: null,
      reason: "project:add",
    });
    expect(uploaded.cid).toBe(cid);
    now += GRACE;
    expect(await h.app.reconcile()).toMatchObject({ adopted: 0 });
    expect(await rowsOf(uploaded.fileHash)).toMatchObject([{ reason: "project:add", unpinned_at: null }]);
    expect(await nodePins(h.ipfsUrl, cid)).toBe(true);
  });
});
