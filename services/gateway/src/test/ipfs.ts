import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cidOfFileHash, createKuboIpfs, type Ipfs } from "@fundraise/ipfs";
import { startIpfsNode } from "@fundraise/ipfs-node";
import type { ContentRef } from "@fundraise/protocol";

/** One directory add the gateway started, and how it ended. */
export interface RecordedAdd {
  outcome: "open" | "added" | "failed";
  cid?: string;
}

/**
 * OUR KUBO-RPC STAND-IN (packages/ipfs-node, not Kubo) for the gateway's tests, in this process with a
 * temporary data dir, and the gateway's client of it with every directory add recorded: the tests see
 * what reached the node, whether an add completed or was cancelled, and what the node pins.
 */
export async function startTestIpfs() {
  const dataDir = mkdtempSync(join(tmpdir(), "gateway-ipfs-"));
  const node = await startIpfsNode({ dataDir });
  const client = createKuboIpfs({ url: node.url, timeoutMs: 5000, readTimeoutMs: 5000 });
  const adds: RecordedAdd[] = [];
  const ipfs: Ipfs = {
    ...client,
    addDirectory(files, options) {
      const add: RecordedAdd = { outcome: "open" };
      adds.push(add);
      const added = client.addDirectory(files, options);
      added.then(
        (cid) => Object.assign(add, { outcome: "added", cid: cid.toString() }),
        () => Object.assign(add, { outcome: "failed" }),
      );
      return added;
    },
  };
  const read = async (path: string) => Buffer.from(await client.cat(path, 100 * 1024 * 1024)).toString("hex");
  return {
    url: node.url,
    ipfs,
    adds,
    /** The hex of each entry of the content a write carries (null: none), read back from the node. */
    async hexOf(content: ContentRef | null): Promise<Record<string, string> | null> {
      if (!content) return null;
      const entries: Record<string, string> = {};
      if (content.fileBytes !== null) entries.whitepaper = await read(`/ipfs/${content.cid}/whitepaper`);
      if (content.imageBytes !== null) entries.image = await read(`/ipfs/${content.cid}/image`);
      return entries;
    },
    /** Whether the node pins this CID (the gateway pins what it adds; a refused write's content is released). */
    pinned: async (cid: string) => (await client.recursivePins()).includes(cid),
    /** Adds a project's content as a pinned directory (what storage leaves): its fileHash's CID. */
    async seed(whitepaper: Uint8Array): Promise<string> {
      const cid = await client.addDirectory([{ name: "whitepaper", content: whitepaper }], { pin: true });
      return cid.toString();
    },
    cidOfFileHash: (fileHash: string) => cidOfFileHash(fileHash).toString(),
    async stop() {
      await node.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export type TestIpfs = Awaited<ReturnType<typeof startTestIpfs>>;
