import Type, { type Static } from "typebox";
import { FileHash, Nullable } from "./common.ts";
import { defineEvent } from "./message.ts";

/**
 * The storage service: the inventory of the pins of content on IPFS (a Kubo RPC API). The gateway pins
 * what it adds; storage records it from the projects service's content events, unpins what no project
 * holds, and sweeps. Content never crosses the bus: messages carry its CID (`ContentRef`).
 * `fileHash` is the sha2-256 digest of the content's CIDv0 (a directory with entries `whitepaper` and,
 * when given, `image`), 64 upper-case hex.
 */

/** A CIDv0 (base58btc, sha2-256), as Kubo's default add names content. */
export const CidV0 = Type.String({ pattern: "^Qm[1-9A-HJ-NP-Za-km-z]{44}$" });

/**
 * A project's content on IPFS, by reference (the claim check): the gateway added the directory (entries
 * `whitepaper` and, when given, `image`) to the node, pinned, while the body arrived; the sizes are those
 * it counted. `fileBytes` null: the body brought no whitepaper (an image alone, which a write refuses).
 * `repinnedAfter`: the gateway pinned the content again after the projects service said the release of
 * this version (and every one before it) was over (CONTENT_RELEASED, ADR 0027); `pinnedAt` when it pinned.
 */
export const ContentRef = Type.Object({
  cid: CidV0,
  fileBytes: Nullable(Type.Integer({ minimum: 1 })),
  imageBytes: Nullable(Type.Integer({ minimum: 1 })),
  repinnedAfter: Type.Optional(Type.Integer({ minimum: 1 })),
  /** When the gateway's add (or its second pin) completed: ms since the epoch, the gateway's clock. */
  pinnedAt: Type.Optional(Type.Integer({ minimum: 0 })),
});
export type ContentRef = Static<typeof ContentRef>;

/** The storage service answers no calls: it keeps the pin inventory from the projects service's events. */
export const StorageRpc = {} as const;

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
