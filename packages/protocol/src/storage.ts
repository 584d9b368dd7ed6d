import Type, { type Static } from "typebox";
import { FileHash, Nullable } from "./common.ts";
import { defineEvent, defineRpc } from "./message.ts";

/**
 * The storage service: the pins of content on IPFS (a Kubo RPC API) and the inventory of what it pinned.
 * Content never crosses the bus: messages carry its CID (`ContentRef`).
 * `fileHash` is the sha2-256 digest of the content's CIDv0 (a directory with entries `whitepaper` and,
 * when given, `image`), 64 upper-case hex.
 */

/** A CIDv0 (base58btc, sha2-256), as Kubo's default add names content. */
const CidV0 = Type.String({ pattern: "^Qm[1-9A-HJ-NP-Za-km-z]{44}$" });

/** Content on IPFS, pinned and recorded: what a pin answers. */
export const Uploaded = Type.Object({
  fileHash: FileHash,
  cid: Type.String({ description: "the directory's CIDv0" }),
  imagePath: Nullable(Type.String({ description: "/ipfs/<cid>/image, or null without an image" })),
});
export type Uploaded = Static<typeof Uploaded>;

/**
 * A project's content on IPFS, by reference (the claim check): the gateway added the directory (entries
 * `whitepaper` and, when given, `image`) to the node while the body arrived, not pinned; the sizes are
 * those it counted. `fileBytes` null: the body brought no whitepaper (an image alone, which a write refuses).
 */
export const ContentRef = Type.Object({
  cid: CidV0,
  fileBytes: Nullable(Type.Integer({ minimum: 1 })),
  imageBytes: Nullable(Type.Integer({ minimum: 1 })),
});
export type ContentRef = Static<typeof ContentRef>;

/** The storage service's calls: pinning content the gateway added, and removing it. */
export const StorageRpc = {
  /**
   * Pins content the gateway added and records it in the inventory (its `pinned` event), once the write
   * that carries it is accepted: a directory with a `whitepaper` entry within the limits, or 400/413.
   */
  pin: defineRpc("storage.content.pin", {
    request: Type.Object({
      cid: CidV0,
      fileBytes: Type.Integer({ minimum: 1 }),
      imageBytes: Nullable(Type.Integer({ minimum: 1 })),
      /** Why it is stored, for the inventory (e.g. `project:add`, `project:12:update`). */
      reason: Type.String({ minLength: 1, maxLength: 200 }),
    }),
    response: Uploaded,
    timeoutMs: 60_000,
  }),
  /** Unpins the content and records it; true when it was pinned, false when unknown or already removed. */
  remove: defineRpc("storage.content.remove", {
    request: Type.Object({ fileHash: FileHash, reason: Type.Optional(Type.String({ maxLength: 200 })) }),
    response: Type.Boolean(),
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
