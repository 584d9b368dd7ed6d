import type { Bus } from "@fundraise/bus";
import { cidOfFileHash, createKuboIpfs } from "@fundraise/ipfs";
import { type ContentRef, StorageRpc, type Uploaded } from "@fundraise/protocol";

export interface Content {
  file: Uint8Array | null;
  image: Uint8Array | null;
}

/**
 * Adds the file (and image) to the node as the gateway does while a body arrives: one directory
 * (`whitepaper`, `image`), Kubo's default import options, not pinned. Its reference, as a project write
 * carries it; null when there is neither.
 */
export async function addContent(ipfsUrl: string, content: Content): Promise<ContentRef | null> {
  const entries = [
    { name: "whitepaper", content: content.file },
    { name: "image", content: content.image },
  ].filter((entry): entry is { name: string; content: Uint8Array } => entry.content !== null);
  if (entries.length === 0) return null;
  const ipfs = createKuboIpfs({ url: ipfsUrl, timeoutMs: 10_000, readTimeoutMs: 10_000 });
  const cid = await ipfs.addDirectory(entries);
  return {
    cid: cid.toString(),
    fileBytes: content.file?.byteLength || null,
    imageBytes: content.image?.byteLength || null,
  };
}

/** Adds the content and has the storage service pin it (`storage.content.pin`): pinned and recorded. */
export async function storeContent(
  h: { client: Bus; ipfsUrl: string },
  content: Content & { reason: string },
): Promise<Uploaded> {
  const added = await addContent(h.ipfsUrl, content);
  if (!added?.fileBytes) throw new Error("no whitepaper to store");
  return h.client.call(StorageRpc.pin, { ...added, fileBytes: added.fileBytes, reason: content.reason });
}

/** The whitepaper of the content a fileHash names, read from the node. */
export async function readWhitepaper(ipfsUrl: string, fileHash: string): Promise<Buffer> {
  const ipfs = createKuboIpfs({ url: ipfsUrl, timeoutMs: 10_000, readTimeoutMs: 10_000 });
  return Buffer.from(await ipfs.cat(`/ipfs/${cidOfFileHash(fileHash)}/whitepaper`, 100 * 1024 * 1024));
}
