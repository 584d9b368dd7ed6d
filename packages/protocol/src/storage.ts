import Type from "typebox";
import { Bytes, FileHash, Nullable } from "./common.ts";
import { defineEvent, defineRpc } from "./message.ts";

/**
 * The storage service: content on IPFS (a Kubo RPC API) and the inventory of what it pinned. Content
 * crosses the bus as bytes (CBOR), never as hex in JSON. `fileHash` is the sha2-256 digest of the
 * content's CIDv0 (a directory with entries `whitepaper` and, when given, `image`), 64 upper-case hex.
 */
export const StorageRpc = {
  upload: defineRpc("storage.content.upload", {
    request: Type.Object({
      file: Bytes,
      image: Nullable(Bytes),
      /** Why it is stored, for the inventory (e.g. `project:add`, `project:12:update`). */
      reason: Type.String({ minLength: 1, maxLength: 200 }),
    }),
    response: Type.Object({
      fileHash: FileHash,
      cid: Type.String({ description: "the directory's CIDv0" }),
      imagePath: Nullable(Type.String({ description: "/ipfs/<cid>/image, or null without an image" })),
    }),
    timeoutMs: 60_000,
  }),
  /** Unpins the content and records it; true when it was pinned, false when unknown or already removed. */
  remove: defineRpc("storage.content.remove", {
    request: Type.Object({ fileHash: FileHash, reason: Type.Optional(Type.String({ maxLength: 200 })) }),
    response: Type.Boolean(),
    timeoutMs: 30_000,
  }),
  /** The whitepaper's bytes, read back from IPFS; content that cannot be found fails fast (404). */
  read: defineRpc("storage.content.read", {
    request: Type.Object({ fileHash: FileHash }),
    response: Bytes,
    timeoutMs: 30_000,
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
