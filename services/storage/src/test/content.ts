import { randomBytes } from "node:crypto";
import { cidOfFileHash, createKuboIpfs, fileHashOf } from "@fundraise/ipfs";
import { kuboDirectoryCidOf } from "@fundraise/ipfs-node";
import type { ContentRef, PayloadOf, ProjectsEvents } from "@fundraise/protocol";

export interface Content {
  file: Uint8Array | null;
  image: Uint8Array | null;
}

/** Content on the node, as the projects service's events name it. */
export interface Added extends ContentRef {
  fileHash: string;
}

/**
 * Adds the file (and image) to the node as the gateway does while a body arrives: one directory
 * (`whitepaper`, `image`), Kubo's default import options, pinned (unless `pin` is false). Its reference,
 * as a project write carries it; null when there is neither.
 */
export async function addContent(ipfsUrl: string, content: Content, pin = true): Promise<ContentRef | null> {
  const entries = [
    { name: "whitepaper", content: content.file },
    { name: "image", content: content.image },
  ].filter((entry): entry is { name: string; content: Uint8Array } => entry.content !== null);
  if (entries.length === 0) return null;
  const ipfs = createKuboIpfs({ url: ipfsUrl, timeoutMs: 10_000, readTimeoutMs: 10_000 });
  const cid = await ipfs.addDirectory(entries, { pin });
  return {
    cid: cid.toString(),
    fileBytes: content.file?.byteLength || null,
    imageBytes: content.image?.byteLength || null,
  };
}

/** A whitepaper of `bytes` random bytes, added pinned as the gateway adds an Add's content. */
export async function addWhitepaper(ipfsUrl: string, bytes = 500): Promise<Added> {
  const ref = await addContent(ipfsUrl, { file: randomBytes(bytes), image: null });
  if (!ref) throw new Error("nothing added");
  return { ...ref, fileHash: fileHashOf(ref.cid) };
}

/** Content of a project's shape that the node never had (its blocks gone, as far as the node knows). */
export async function contentNotOnNode(): Promise<Added> {
  const cid = await kuboDirectoryCidOf({ whitepaper: randomBytes(64) });
  return { cid: cid.toString(), fileHash: fileHashOf(cid), fileBytes: 64, imageBytes: null };
}

/** `projects.content.taken` for this content, as the projects service emits it in an Add's transaction. */
export function takenOf(
  added: Added,
  projectId = 1,
  reason = "project:add",
): PayloadOf<typeof ProjectsEvents.contentTaken> {
  const { cid, fileHash, fileBytes, imageBytes } = added;
  return { projectId, fileHash, cid, fileBytes, imageBytes, reason };
}

/** The whitepaper of the content a fileHash names, read from the node. */
export async function readWhitepaper(ipfsUrl: string, fileHash: string): Promise<Buffer> {
  const ipfs = createKuboIpfs({ url: ipfsUrl, timeoutMs: 10_000, readTimeoutMs: 10_000 });
  return Buffer.from(await ipfs.cat(`/ipfs/${cidOfFileHash(fileHash)}/whitepaper`, 100 * 1024 * 1024));
}
