import Type, { type Static } from "typebox";
import { Bytes, FileHash, Nullable } from "./common.ts";
import { defineEvent, defineRpc } from "./message.ts";
import { defineStream, StreamEnd } from "./stream.ts";

/**
 * The storage service: content on IPFS (a Kubo RPC API) and the inventory of what it pinned. Content
 * crosses the bus as bytes (CBOR), never as hex in JSON: an upload as the parts of a `StorageUpload`.
 * `fileHash` is the sha2-256 digest of the content's CIDv0 (a directory with entries `whitepaper` and,
 * when given, `image`), 64 upper-case hex.
 */

/** What an upload answers once its content is on IPFS, pinned and recorded. */
export const Uploaded = Type.Object({
  fileHash: FileHash,
  cid: Type.String({ description: "the directory's CIDv0" }),
  imagePath: Nullable(Type.String({ description: "/ipfs/<cid>/image, or null without an image" })),
});
export type Uploaded = Static<typeof Uploaded>;

/** The entries of an upload: the directory's names. */
export const UPLOAD_ENTRIES = ["whitepaper", "image"] as const;
export type UploadEntry = (typeof UPLOAD_ENTRIES)[number];

/**
 * Content going to IPFS as it arrives: the gateway opens an upload on any storage instance, sends the
 * decoded bytes of the whitepaper and the image as parts (entries `whitepaper`, `image`) to that instance,
 * which feeds them to one directory add as they come; the projects service finishes it (with the reason
 * for the inventory) once it accepted the write, or it is aborted. Nothing is pinned before the finish.
 */
export const StorageUpload = defineStream("storage.upload", {
  open: Type.Object({}),
  finish: {
    request: Type.Object({
      /** Why it is stored, for the inventory (e.g. `project:add`, `project:12:update`). */
      reason: Type.String({ minLength: 1, maxLength: 200 }),
    }),
    response: Uploaded,
    timeoutMs: 60_000,
  },
  partBytes: 512 * 1024,
  partTimeoutMs: 60_000,
});

/** Content streamed to a storage instance for a project write, not finished yet; which entries it holds. */
export const ContentStream = Type.Object({
  stream: StreamEnd,
  file: Type.Boolean({ description: "a whitepaper is in it" }),
  image: Type.Boolean({ description: "an image is in it" }),
});
export type ContentStream = Static<typeof ContentStream>;

/** The storage service's other calls: removal and reading back. */
export const StorageRpc = {
  /** Unpins the content and records it; true when it was pinned, false when unknown or already removed. */
  remove: defineRpc("storage.content.remove", {
    request: Type.Object({ fileHash: FileHash, reason: Type.Optional(Type.String({ maxLength: 200 })) }),
    response: Type.Boolean(),
    timeoutMs: 30_000,
  }),
  /**
   * The whitepaper's bytes, read back from IPFS; content that cannot be found fails fast (404). The
   * journal keeps the answer's length, not the file: IPFS keeps that under its CID.
   */
  read: defineRpc("storage.content.read", {
    request: Type.Object({ fileHash: FileHash }),
    response: Bytes,
    timeoutMs: 30_000,
    journal: "without-bytes",
  }),
} as const;

export const StorageEvents = {
  pinned: defineEvent(
    "storage.content.pinned",
    Type.Object({ fileHash: FileHash, cid: Type.String(), reason: Type.String() }),
  ),
  unpinned: defineEvent(
    "storage.content.unpinned",
    Type.Object({ fileHash: FileHash, cid: Type.String(), reason: Type.String() }),
  ),
} as const;

/** The storage service's error codes (its own cases; IPFS_UNAVAILABLE and PAYLOAD_TOO_LARGE are shared). */
export const StorageErrorCode = {
  CONTENT_NOT_FOUND: "CONTENT_NOT_FOUND",
  CONTENT_EMPTY: "CONTENT_EMPTY",
  IPFS_TIMEOUT: "IPFS_TIMEOUT",
} as const;
