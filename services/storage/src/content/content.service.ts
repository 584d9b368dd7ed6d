import type { TraceContext } from "@fundraise/bus";
import { ContentErrors, type ContentLimits, fileHashOf, type Ipfs } from "@fundraise/ipfs";
import { StorageEvents } from "@fundraise/protocol";
import { isUniqueViolation, type Logger } from "@fundraise/service-kit";
import { CID } from "multiformats/cid";
import type { PinRepository } from "./pin.repository.ts";

/** The partial unique index that keeps one live row per fileHash (migration `storage`). */
export const LIVE_PIN_INDEX = "pin_live_file_hash";

export interface Uploaded {
  fileHash: string;
  cid: string;
  imagePath: string | null;
}

/** Content the gateway added to the node, not pinned: the directory and its entries' sizes. */
export interface Added {
  cid: string;
  fileBytes: number;
  imageBytes: number | null;
}

export interface ContentService {
  /**
   * Pins content the gateway added (a directory with a `whitepaper` entry, within the limits) and records
   * it: its live row and `pinned` event, or, for bytes recorded before, their live row made young again.
   * Pins of the same new bytes at once converge: the one whose insert meets another's live row records
   * again and takes that row. A failed record takes the pin back, unless the content has a live row or the
   * inventory cannot be read (never unpin when unsure).
   */
  pin(added: Added, reason: string, ctx: TraceContext): Promise<Uploaded>;
  /**
   * Unpins and records; true when it was pinned. Content uploaded again within the grace period (the
   * same bytes, by an Add that may not have committed yet) stays: false, and the reconciliation removes
   * it later if no project holds it.
   */
  remove(fileHash: string, reason: string, ctx: TraceContext): Promise<boolean>;
  /**
   * Removes content as an orphan, but only when its live row, under its lock, was last uploaded before
   * `cutoff`: an upload of the same bytes since the reconciliation looked makes it young again, and it
   * stays. True when it was removed.
   */
  removeOrphan(fileHash: string, cutoff: Date, reason: string, ctx: TraceContext): Promise<boolean>;
  /**
   * Records content the node pins without any live row (an upload whose record failed while the
   * inventory could not be read, so its pin was left): a live row, uploaded now, that the orphan
   * reconciliation then judges like any other. False when a live row exists by now (an upload recorded
   * it, before or while this looked).
   */
  adopt(cid: string, reason: string, ctx: TraceContext): Promise<boolean>;
}

/**
 * The rules of the storage service (no SQL, no HTTP): what goes on IPFS, how it is named, and that the
 * inventory and the node agree. The gateway adds content unpinned; a pin pins first and records after;
 * a failed record unpins again, so no content stays pinned without its row. Remove unpins and records in
 * one transaction (an unpin that finds nothing pinned counts as done, so a retry after a failed commit is
 * safe).
 *
 * An upload and a removal of the same bytes meet on the live row's lock. The upload that finds the live
 * row marks it uploaded now (`lastUploadedAt`), so a reconciliation that locks it afterwards sees young
 * content and leaves it. A removal that took the lock first may have unpinned what this upload had just
 * pinned: so an upload of content that has any row pins again under the lock before it records.
 *
 * Two uploads of the same new bytes (or an upload and an adoption) may both find no live row, and both
 * insert one: the partial unique index `pin_live_file_hash` lets one commit, the other's insert fails once
 * it has. That failure only says the bytes were recorded meanwhile, so the upload records once more and
 * takes the live-row path (pinned again under the lock, young again), and the adoption answers false.
 */
export function createContentService(deps: {
  ipfs: Ipfs;
  pins: PinRepository;
  limits: ContentLimits;
  /** How long an upload may belong to an Add or Update that has not committed (ORPHAN_GRACE_MS). */
  graceMs: number;
  log: Logger;
}): ContentService {
  const { ipfs, pins, limits, graceMs, log } = deps;

  /**
   * Unpins the live content and records it, in one transaction. With a cutoff (the reconciliation), only
   * content last uploaded before it; without (a project's removal), not content uploaded again by someone
   * else within the grace period.
   */
  function unpinAndRecord(fileHash: string, reason: string, ctx: TraceContext, cutoff: Date | null) {
    return pins.transaction(async (tx) => {
      const pin = await tx.lockLive(fileHash);
      if (!pin) return false;
      if (cutoff !== null && pin.lastUploadedAt >= cutoff) return false;
      const uploadedAgain = pin.lastUploadedAt.getTime() > pin.pinnedAt.getTime();
      if (cutoff === null && uploadedAgain && Date.now() - pin.lastUploadedAt.getTime() < graceMs)
        return false;
      await ipfs.unpin(CID.parse(pin.cid));
      pin.unpinnedAt = new Date();
      pin.unpinReason = reason;
      await tx.emit(StorageEvents.unpinned, { fileHash, cid: pin.cid, reason }, ctx);
      await tx.save();
      return true;
    });
  }

  return {
    async pin({ cid, fileBytes, imageBytes }, reason, ctx) {
      if (fileBytes > limits.maxFileBytes) throw ContentErrors.tooLarge("file", limits.maxFileBytes);
      if (imageBytes !== null && imageBytes > limits.maxImageBytes) {
        throw ContentErrors.tooLarge("image", limits.maxImageBytes);
      }
      const added = CID.parse(cid);
      const fileHash = fileHashOf(cid);
      // Pinned before it is recorded, so a row never names content the node may drop; only a project's
      // layout stays pinned. The shape is read while the node pins (both only read the blocks).
      const [, isProject] = await Promise.all([ipfs.pin(added), ipfs.isProjectContent(added)]);
      if (!isProject) {
        await ipfs.unpin(added).catch(() => undefined);
        throw ContentErrors.notProjectContent(cid);
      }
      const uploaded = { fileHash, cid, imagePath: imageBytes === null ? null : `/ipfs/${cid}/image` };
      const recordOnce = () =>
        pins.transaction(async (tx) => {
          const live = await tx.lockLive(fileHash);
          // Content recorded before: a removal that held the lock since the pin may have unpinned it (and
          // failed its commit, or recorded it). Pinned again under the lock, it stays pinned.
          if (live || (await tx.everRecorded(fileHash))) await ipfs.pin(added);
          if (live) {
            // The same bytes again: recorded already; young again for the orphan reconciliation. Later than
            // its pinning, always, also within the same millisecond: a removal tells "uploaded again" so.
            live.lastUploadedAt = new Date(Math.max(Date.now(), live.pinnedAt.getTime() + 1));
            await tx.save();
            return;
          }
          tx.create({ cid, fileHash, reason, fileBytes, imageBytes });
          await tx.emit(StorageEvents.pinned, { fileHash, cid, reason }, ctx);
          await tx.save();
        });
      try {
        await recordOnce().catch((error: unknown) => {
          if (!isUniqueViolation(error, LIVE_PIN_INDEX)) throw error;
          // Another upload (or an adoption) recorded the same bytes between this one's look and its insert,
          // and has committed: recorded before, then. Once more, this upload finds that live row.
          log.info(
            { fileHash, cid, reason, requestId: ctx.requestId },
            "the same content was recorded by another upload at once: recording again as that live row",
          );
          return recordOnce();
        });
      } catch (error) {
        // Nothing recorded: take the pin back unless the content has a live row (recorded before, or by
        // another upload meanwhile). An inventory that cannot be read leaves the pin: never unpin when unsure.
        const live = await pins.findLive(fileHash).then(
          (row) => row !== null,
          () => true,
        );
        if (!live) await ipfs.unpin(added).catch(() => undefined);
        throw error;
      }
      return uploaded;
    },

    remove: (fileHash, reason, ctx) => unpinAndRecord(fileHash, reason, ctx, null),

    removeOrphan: (fileHash, cutoff, reason, ctx) => unpinAndRecord(fileHash, reason, ctx, cutoff),

    async adopt(cid, reason, ctx) {
      const fileHash = fileHashOf(cid);
      try {
        return await pins.transaction(async (tx) => {
          if (await tx.lockLive(fileHash)) return false;
          // Sizes unknown (the bytes were never seen here): recorded as 0.
          tx.create({ cid, fileHash, reason, fileBytes: 0, imageBytes: null });
          await tx.emit(StorageEvents.pinned, { fileHash, cid, reason }, ctx);
          await tx.save();
          return true;
        });
      } catch (error) {
        // An upload of these bytes recorded them while this looked: they have a live row, nothing to adopt.
        if (!isUniqueViolation(error, LIVE_PIN_INDEX)) throw error;
        log.info(
          { fileHash, cid, requestId: ctx.requestId },
          "content recorded by an upload while being adopted: left to that record",
        );
        return false;
      }
    },
  };
}
