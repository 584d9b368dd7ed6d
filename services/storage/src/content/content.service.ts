import type { MessageContext, TraceContext } from "@fundraise/bus";
import { type Ipfs, type Releaser, releaseAndUnpin } from "@fundraise/ipfs";
import { ErrorCode, errors, type PayloadOf, type ProjectsEvents, StorageEvents } from "@fundraise/protocol";
import { isUniqueViolation, type Logger } from "@fundraise/service-kit";
import { CID } from "multiformats/cid";
import type { NewPinRow, PinRepository, PinTx } from "./pin.repository.ts";

/** The partial unique index that keeps one live row per fileHash (migration `storage`). */
export const LIVE_PIN_INDEX = "pin_live_file_hash";

/** The consumer name of the storage service's subscriptions (queues `storage.<event>`, message claims). */
export const CONSUMER = "storage";

/** Reasons are varchar(200) in the inventory and at most 200 characters in a release request. */
const MAX_REASON = 200;

export type ContentTaken = PayloadOf<typeof ProjectsEvents.contentTaken>;
export type ContentDropped = PayloadOf<typeof ProjectsEvents.contentDropped>;

/**
 * What asking to unpin one content came to: `unpinned` (released and unpinned; its live row, if any,
 * marked), `held` (a project holds it: left pinned), `late` or `failed` (released, the unpin not done in
 * the window: left for the next sweep), `changed` (its live row is not the one the caller looked at any
 * more: nothing asked).
 */
export type ReleaseOutcome = "unpinned" | "held" | "late" | "failed" | "changed";

export interface ContentService {
  /**
   * `projects.content.taken`: records the content's live row and the `pinned` event in one transaction,
   * once per message. Content with a live row already is left as it is. True when recorded now.
   */
  taken(event: ContentTaken, ctx: MessageContext): Promise<boolean>;
  /**
   * `projects.content.dropped`: releases and unpins the content (`releaseAndUnpin`), marking its live row.
   * Held, late or failed: nothing more (the sweep judges it later). Throws a retryable error only when the
   * projects service did not answer the release, so the message is delivered again.
   */
  dropped(event: ContentDropped, ctx: MessageContext): Promise<ReleaseOutcome | "duplicate">;
  /** Records a live row and its `pinned` event (the sweep's held, unrecorded pins); false if one exists. */
  record(row: NewPinRow, ctx: TraceContext): Promise<boolean>;
  /**
   * The sweep's unpin: under the lock of the content's live row, which must still be row `liveRowId`
   * (null: the content must still have none), releases and unpins it and marks the row.
   */
  release(
    fileHash: string,
    reason: string,
    ctx: TraceContext,
    liveRowId: number | null,
  ): Promise<ReleaseOutcome>;
  /**
   * The sweep's repair: pins the content of live row `pin` again, under the row's lock (a release under
   * way finishes first; a row marked meanwhile is left: false). Throws the node's failure (content it
   * cannot find: not_found or timeout).
   */
  repin(pin: { id: number; fileHash: string; cid: string }): Promise<boolean>;
}

/** A release the projects service did not answer: nothing was unpinned; retryable (try again later). */
const releaseUnanswered = (cause: unknown) =>
  errors.unavailable(
    ErrorCode.SERVICE_UNAVAILABLE,
    "The projects service did not answer the release: nothing was unpinned.",
    { cause },
  );

/** Whether the error is `releaseUnanswered`'s (or the projects service's own unavailability). */
export const isReleaseUnanswered = (error: unknown) =>
  (error as { code?: unknown } | null)?.code === ErrorCode.SERVICE_UNAVAILABLE;

/**
 * The pin inventory's rules (no SQL, no HTTP), as ADR 0023 and 0027 divide the work: the gateway adds
 * content pinned; the projects service announces in its write's transaction that a project took content
 * or let it go; storage records the first and unpins the second, and sweeps (reconcile.ts). Recording
 * pins nothing: a live row whose content the node lacks is the sweep's to pin again (`repin`).
 *
 * Content is unpinned only through a release (`releaseAndUnpin`): the projects service answers, under the
 * content's lock, that a project holds it (left pinned) or releases it for a window in which it is
 * unpinned. The live row stays locked from before the asking until it is marked, so a `taken` of the
 * same content arriving meanwhile waits and then records a new live row instead of finding the old one
 * about to be marked. Two inserts of the same live row at once meet on `pin_live_file_hash`: the one that
 * fails finds the content recorded, which is what it wanted.
 */
export function createContentService(deps: {
  ipfs: Pick<Ipfs, "pin" | "unpin">;
  pins: PinRepository;
  /** The projects service's side of a release, for the message or round being handled. */
  releaser: (ctx: TraceContext) => Releaser;
  /** When rows are recorded (the sweep's grace periods count from there); Date.now by default. */
  clock?: () => number;
  /** The release window; tests shorten it (releaseAndUnpin's default otherwise). */
  windowMs?: number;
  log: Logger;
}): ContentService {
  const { ipfs, pins, log } = deps;
  const clock = deps.clock ?? Date.now;

  async function insertLive(tx: PinTx, row: NewPinRow, ctx: TraceContext): Promise<boolean> {
    if (await tx.lockLive(row.fileHash)) return false;
    const { fileHash, cid, reason } = row;
    tx.create({ ...row, reason: reason.slice(0, MAX_REASON) }, new Date(clock()));
    await tx.emit(StorageEvents.pinned, { fileHash, cid, reason }, ctx);
    await tx.save();
    return true;
  }

  /** An insert that met another's committed live row of the same content: it is recorded, by that one. */
  async function recordedOnce(row: NewPinRow, ctx: TraceContext, work: () => Promise<boolean>) {
    try {
      return await work();
    } catch (error) {
      if (!isUniqueViolation(error, LIVE_PIN_INDEX)) throw error;
      log.info(
        { fileHash: row.fileHash, cid: row.cid, requestId: ctx.requestId },
        "content recorded by another writer at the same time: left to that record",
      );
      return false;
    }
  }

  /** Releases and unpins under the live row's lock; `expected` undefined: whatever live row it has. */
  async function releaseLocked(
    tx: PinTx,
    fileHash: string,
    reason: string,
    ctx: TraceContext,
    expected: number | null | undefined,
  ): Promise<ReleaseOutcome> {
    const live = await tx.lockLive(fileHash);
    if (expected !== undefined && (live?.id ?? null) !== expected) return "changed";
    const outcome = await releaseAndUnpin(
      { ipfs, releaser: deps.releaser(ctx), ...(deps.windowMs ? { windowMs: deps.windowMs } : {}) },
      [fileHash],
      `storage:${reason}`.slice(0, MAX_REASON),
    ).catch((error: unknown) => {
      throw releaseUnanswered(error);
    });
    if (outcome.unpinned.length > 0) {
      if (live) {
        live.unpinnedAt = new Date(clock());
        live.unpinReason = reason.slice(0, MAX_REASON);
        await tx.emit(StorageEvents.unpinned, { fileHash, cid: live.cid, reason }, ctx);
        await tx.save();
      }
      return "unpinned";
    }
    if (outcome.held.length > 0) return "held";
    const late = outcome.late.length > 0;
    log.warn(
      { fileHash, reason, requestId: ctx.requestId },
      late
        ? "released, but the window passed before the unpin: left for the sweep"
        : "released, but the unpin failed: left for the sweep",
    );
    return late ? "late" : "failed";
  }

  return {
    async taken({ fileHash, cid, fileBytes, imageBytes, reason }, ctx) {
      const row = { fileHash, cid, fileBytes, imageBytes, reason };
      let recorded = false;
      await recordedOnce(row, ctx, () =>
        pins.once(CONSUMER, ctx, async (tx) => {
          recorded = await insertLive(tx, row, ctx);
        }),
      );
      return recorded;
    },

    async dropped({ fileHash, reason }, ctx) {
      let outcome: ReleaseOutcome | "duplicate" = "duplicate";
      await pins.once(CONSUMER, ctx, async (tx) => {
        outcome = await releaseLocked(tx, fileHash, reason, ctx, undefined);
      });
      return outcome;
    },

    record: (row, ctx) => recordedOnce(row, ctx, () => pins.transaction((tx) => insertLive(tx, row, ctx))),

    release: (fileHash, reason, ctx, liveRowId) =>
      pins.transaction((tx) => releaseLocked(tx, fileHash, reason, ctx, liveRowId)),

    repin: ({ id, fileHash, cid }) =>
      pins.transaction(async (tx) => {
        if ((await tx.lockLive(fileHash))?.id !== id) return false;
        await ipfs.pin(CID.parse(cid));
        return true;
      }),
  };
}
