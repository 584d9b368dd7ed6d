import { type Bus, type CallOptions, finishStream, StreamWriter } from "@fundraise/bus";
import { type ContentStream, StorageUpload, type UploadEntry, type Uploaded } from "@fundraise/protocol";

export interface Content {
  file: Uint8Array | null;
  image: Uint8Array | null;
}

/**
 * Sends the file (and image) to the storage service as one upload's parts, as the gateway does while a
 * body arrives: the stream a project write carries, not finished. An empty file or image goes as one
 * empty part (the storage service refuses it at the finish). Null when there is neither.
 */
export async function streamContent(
  bus: Bus,
  content: Content,
  context?: CallOptions,
): Promise<ContentStream | null> {
  const writer = new StreamWriter(bus, StorageUpload, { open: {}, ...(context ? { context } : {}) });
  const entries: [UploadEntry, Uint8Array | null][] = [
    ["whitepaper", content.file],
    ["image", content.image],
  ];
  try {
    for (const [entry, bytes] of entries) {
      if (bytes === null) continue;
      for (let at = 0; at === 0 || at < bytes.byteLength; at += StorageUpload.partBytes) {
        writer.write(entry, bytes.subarray(at, at + StorageUpload.partBytes));
        await writer.ready();
      }
    }
    const stream = await writer.end();
    return stream ? { stream, file: content.file !== null, image: content.image !== null } : null;
  } catch (error) {
    await writer.abort();
    throw error;
  }
}

/** Streams the content and finishes the upload: on IPFS, pinned and recorded. */
export async function storeContent(
  bus: Bus,
  content: Content & { reason: string },
  context?: CallOptions,
): Promise<Uploaded> {
  const streamed = await streamContent(bus, content, context);
  if (!streamed) throw new Error("nothing to store");
  return finishStream(bus, StorageUpload, streamed.stream, { reason: content.reason }, context);
}
