import { randomBytes } from "node:crypto";
import { ErrorCode, StorageEvents, StorageRpc } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addContent,
  expectAppError,
  type Harness,
  outboxPayloads,
  pinRows,
  REAL_KUBO_URL,
  startHarness,
  storeContent,
} from "../test/harness.ts";

/** Stops OUR KUBO-RPC STAND-IN (packages/ipfs-node, not Kubo) under the running service. */
describe.skipIf(REAL_KUBO_URL !== undefined)("storage with IPFS stopped mid-run", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness("fault");
  });
  afterAll(async () => h?.stop());

  it("pin and remove answer 503 and nothing is recorded", async () => {
    const kept = await storeContent(h, {
      file: randomBytes(100),
      image: null,
      reason: "before",
    });
    const added = await addContent(h.ipfsUrl, { file: randomBytes(5000), image: null });
    await h.node!.stop();
    const started = performance.now();
    await expectAppError(
      h.client.call(StorageRpc.pin, { ...added!, fileBytes: 5000, reason: "during" }),
      "unavailable",
      ErrorCode.IPFS_UNAVAILABLE,
    );
    await expectAppError(
      h.client.call(StorageRpc.remove, { fileHash: kept.fileHash }),
      "unavailable",
      ErrorCode.IPFS_UNAVAILABLE,
    );
    expect(performance.now() - started).toBeLessThan(3000);
    const rows = await pinRows(h.sql);
    expect(rows.map((r) => [r.reason, r.unpinned_at])).toEqual([["before", null]]);
    expect(await outboxPayloads(h.sql, StorageEvents.pinned)).toHaveLength(1);
    expect(await outboxPayloads(h.sql, StorageEvents.unpinned)).toHaveLength(0);
  });
});
