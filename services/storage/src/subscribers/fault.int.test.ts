import { ProjectsEvents, StorageEvents } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONSUMER } from "../content/content.service.ts";
import {
  addWhitepaper,
  drained,
  type Harness,
  outboxPayloads,
  pinRows,
  publish,
  REAL_KUBO_URL,
  startHarness,
  takenOf,
} from "../test/harness.ts";

/**
 * Stops OUR KUBO-RPC STAND-IN (packages/ipfs-node, not Kubo) under the running service; releases are
 * answered by A STAND-IN FOR THE PROJECTS SERVICE (test/projects-stand-in.ts).
 */
describe.skipIf(REAL_KUBO_URL !== undefined)("storage with IPFS stopped mid-run", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness("fault");
  });
  afterAll(async () => h?.stop());

  it("a drop whose unpin fails is left for the sweep, not retried; a round says IPFS is away", async () => {
    const added = await addWhitepaper(h.ipfsUrl);
    await publish(h, ProjectsEvents.contentTaken, takenOf(added, 3));
    await drained(h, ProjectsEvents.contentTaken);
    await h.node!.stop();
    await publish(h, ProjectsEvents.contentDropped, {
      projectId: 3,
      fileHash: added.fileHash,
      reason: "deleted",
    });
    await drained(h, ProjectsEvents.contentDropped);
    // Released, the unpin failed: nothing confirmed, the row live, no event, the message not retried.
    expect(h.projects.released.map((r) => r.fileHash)).toEqual([added.fileHash]);
    expect(h.projects.confirmed).toEqual([]);
    expect((await pinRows(h.sql)).map((r) => [r.reason, r.unpinned_at])).toEqual([["project:add", null]]);
    expect(await outboxPayloads(h.sql, StorageEvents.unpinned)).toEqual([]);
    const queue = `${CONSUMER}.${ProjectsEvents.contentDropped.name}`;
    for (const name of [`${queue}.retry.1000ms`, `${queue}.dlq`]) {
      expect(await h.vhost.queueCounts(name)).toEqual({ ready: 0, unacknowledged: 0 });
    }
    const started = performance.now();
    expect(await h.app.reconcile()).toMatchObject({ removed: 0, skipped: "IPFS or database unavailable" });
    expect(performance.now() - started).toBeLessThan(5000);
  });
});
