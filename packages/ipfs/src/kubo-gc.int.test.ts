import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type IpfsNode, startIpfsNode } from "@fundraise/ipfs-node";
import { StorageErrorCode } from "@fundraise/protocol";
import { expectAppError } from "@fundraise/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKuboIpfs, type Ipfs } from "./kubo.ts";

/** `gc()` of the Kubo client against OUR KUBO-RPC STAND-IN (packages/ipfs-node, not Kubo). */
describe("the Kubo client's gc against the Kubo-RPC stand-in (not Kubo)", () => {
  let dataDir: string;
  let node: IpfsNode;
  let ipfs: Ipfs;
  const utf8 = (s: string) => new TextEncoder().encode(s);

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "ipfs-gc-"));
    node = await startIpfsNode({ dataDir });
    ipfs = createKuboIpfs({ url: node.url, timeoutMs: 5000, readTimeoutMs: 5000 });
  });
  afterAll(async () => {
    await node?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("removes what no pin reaches and answers how many blocks; pinned content stays readable", async () => {
    // A one-file directory of a few bytes is two blocks: the file and the directory.
    const kept = await ipfs.addDirectory([{ name: "whitepaper", content: utf8("pinned paper") }], {
      pin: true,
    });
    const dropped = await ipfs.addDirectory([{ name: "whitepaper", content: utf8("unpinned paper") }]);
    expect(await ipfs.gc()).toBe(2);
    expect(Buffer.from(await ipfs.cat(`/ipfs/${kept}/whitepaper`, 100)).toString()).toBe("pinned paper");
    await expectAppError(
      ipfs.cat(`/ipfs/${dropped}/whitepaper`, 100),
      "not_found",
      StorageErrorCode.CONTENT_NOT_FOUND,
    );
    expect(await ipfs.gc()).toBe(0);
    // Unpinned, the kept directory goes at the next GC.
    expect(await ipfs.unpin(kept)).toBe(true);
    expect(await ipfs.gc()).toBe(2);
    // Its blocks are gone: that is not an answer about its shape (never "not a project's").
    await expect(ipfs.isProjectContent(kept)).rejects.toMatchObject({ kind: "not_found" });
  });
});
