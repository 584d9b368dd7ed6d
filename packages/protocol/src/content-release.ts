import Type from "typebox";
import { FileHash, Id, Nullable } from "./common.ts";
import { CidV0 } from "./storage.ts";

/**
 * Content is unpinned only through a release (ADR 0027): the unpinner (the storage service, or the gateway
 * for its refused write) asks the projects service to release the content; under the content's lock it
 * answers `held` while a project holds it, else records a release (a version) and answers it. The unpinner
 * then starts its unpin within `CONTENT_RELEASE_WINDOW_MS` of the moment it asked (past it, it gives up and
 * the sweep asks again), keeps the request open until the node answers, cut at the window's end, and
 * confirms. The window is long on purpose: Kubo applies an unpin it received even after the client gave
 * up (its `pin rm` waits for the GC lock, a GC of a large repository holds it for minutes), so an
 * unconfirmed release counts as landing for all of it. A confirmed one ends the wait at once: the usual
 * case, milliseconds after the release. A write that takes content released in the last
 * `CONTENT_RELEASE_MEMORY_MS` is refused with CONTENT_RELEASED until its content was pinned again after
 * every such release was over (confirmed, or its window passed): no project commits with content a late
 * unpin can still take away. Clock-free but for the unpinner's own timer: the projects service's database
 * dates the releases and the windows, and the gateway pins again only after an answer that said "over".
 */
export const CONTENT_RELEASE_WINDOW_MS = 10 * 60_000;

/**
 * How long a release is remembered: its window plus far longer than any write takes between its pin and its
 * transaction (an Add's RPC deadline is 60 s; the projects service refuses a pin older than
 * `CONTENT_PIN_MAX_AGE_MS`), so a release older than this ended before the write pinned.
 */
export const CONTENT_RELEASE_MEMORY_MS = 60 * 60_000;

/**
 * A write whose content the gateway pinned longer ago than this (its clock against the database's; a
 * frozen process, a stalled Redis) is refused (503, to send again): releases are remembered for a bounded
 * time only, so the time from the pin to the transaction must be bounded too.
 */
export const CONTENT_PIN_MAX_AGE_MS = 10 * 60_000;

/** A content released: its unpinner may unpin it within the window, then confirms it by `version`. */
export const ContentRelease = Type.Object({ fileHash: FileHash, version: Type.Integer({ minimum: 1 }) });

export const ReleaseContentRequest = Type.Object({
  fileHashes: Type.Array(FileHash, { maxItems: 1000 }),
  /** Who releases and why, for the logs (e.g. `storage:project:12:deleted`, `gateway:refused`). */
  reason: Type.String({ minLength: 1, maxLength: 200 }),
});

export const ReleaseContentAnswer = Type.Object({
  /** May be unpinned now, within the window. */
  released: Type.Array(ContentRelease),
  /** A project holds these: never unpin them. */
  held: Type.Array(FileHash),
});

/**
 * The details of CONTENT_RELEASED: `waitMs` > 0 while an unpin of the content may still land (ask again
 * then, without pinning); 0 when every release up to `version` is over (pin again, then write again with
 * `repinnedAfter: version`).
 */
export const ContentReleasedDetails = Type.Object({
  fileHash: FileHash,
  version: Type.Integer({ minimum: 1 }),
  waitMs: Type.Integer({ minimum: 0 }),
});

/** A project took this content (an Add, or an Update with a new file): the inventory records its pin. */
export const ContentTaken = Type.Object({
  projectId: Id,
  fileHash: FileHash,
  cid: CidV0,
  fileBytes: Nullable(Type.Integer({ minimum: 1 })),
  imageBytes: Nullable(Type.Integer({ minimum: 1 })),
  /** Why it is stored, for the inventory (`project:add`, `project:12:update`). */
  reason: Type.String(),
});

/** A project let go of this content (deleted, rejected by a viewer, its file replaced): storage releases it. */
export const ContentDropped = Type.Object({
  projectId: Id,
  fileHash: FileHash,
  reason: Type.String(),
});
