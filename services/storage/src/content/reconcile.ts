import { randomUUID } from "node:crypto";
import { fileHashOf, type Ipfs } from "@fundraise/ipfs";
import { isAppError } from "@fundraise/protocol";
import type { Logger } from "@fundraise/service-kit";
import { CID } from "multiformats/cid";
import { type ContentService, isReleaseUnanswered, type ReleaseOutcome } from "./content.service.ts";
import type { PinRepository } from "./pin.repository.ts";

/** The unpin reason of a live row no project holds. */
export const ORPHAN_REASON = "orphan: no project holds it";

/** The release reason of content pinned on the node without a live row. */
export const UNRECORDED_REASON = "orphan: pinned on the node without a record";

/** The reason of a live row recorded for content pinned on the node without one that a project holds. */
export const RECORDED_REASON = "recorded: pinned on the node, held by a project";

/** Held by the storage replica that reconciles; the others skip their round. */
export const RECONCILE_LOCK = "storage:reconcile";

/** The projects service's `heldContent` asks at most this many contents at once. */
export const RECONCILE_BATCH = 1000;

/** Unrecorded pins remembered between rounds, at most (a node with more is reconciled a part at a time). */
const MAX_REMEMBERED = 10_000;

type Skipped =
  | "another replica is reconciling"
  | "projects service unavailable"
  | "IPFS or database unavailable";

/** One round's figures; `skipped` says why it stopped before looking at everything. */
export interface ReconcileRound {
  /** Live rows recorded longer than the grace period ago that the projects service was asked about. */
  checked: number;
  /** Content asked to be released: those rows no project holds, and pins unrecorded for a grace period. */
  orphans: number;
  /** Of those, released and unpinned (their rows marked). */
  removed: number;
  /** Released but not unpinned in the window, or failed (IPFS or the database); the next round tries again. */
  failed: number;
  /** Pins unrecorded for a grace period that a project holds: recorded as live now. */
  recorded: number;
  /** Live rows whose content the node did not pin: pinned again. */
  repinned: number;
  /** Live rows whose content the node cannot find: left for an operator (logged as errors). */
  missing: number;
  skipped?: Skipped;
}

/** A round's figures before it looked at anything. */
const noFigures = (): ReconcileRound => ({
  checked: 0,
  orphans: 0,
  removed: 0,
  failed: 0,
  recorded: 0,
  repinned: 0,
  missing: 0,
});

export interface Reconciler {
  /** One round: never throws for the projects service or IPFS being away (it stops and says so). */
  round(): Promise<ReconcileRound>;
}

/**
 * The sweep (ADR 0023): makes the inventory, the node's pins and the projects service agree, in three parts.
 *
 * a. Live rows recorded longer than `graceMs` ago that no project holds (`heldContent`, asked in batches;
 *    when it does not answer, the round stops and unpins nothing) are released and unpinned, each under
 *    its row's lock (`content.release`), and marked.
 * b. Pins on the node of a project's shape (a sha2-256 CIDv0 directory with `whitepaper`) without a live
 *    row, first seen so at least `graceMs` before, are released and unpinned: the pins of refused writes,
 *    and of a gateway stopped between its pinned add and the projects service's write. Content a project
 *    holds after all (the inventory missed it) is recorded instead. Other pins are never touched;
 *    `sweepUnrecorded` false turns this part off (a node shared with others).
 * c. Live rows whose content the node does not pin are pinned again, under the row's lock (a drop under
 *    way finishes first); content the node cannot find is counted as missing and logged, for an operator.
 *    A row recorded after its content was dropped (the two events come on separate queues) is pinned
 *    again here too, and released by part a once its grace period is over.
 *
 * Content is unpinned only through a release (ADR 0027), so a project's content never is. One replica
 * reconciles at a time (an advisory lock); a round that finds the lock taken does nothing.
 */
export function createReconciler(deps: {
  pins: PinRepository;
  content: ContentService;
  /** Asks the projects service which of these contents (at most `batchSize`) a project holds. */
  heldContent: (fileHashes: string[], ctx: { requestId: string }) => Promise<string[]>;
  node: Pick<Ipfs, "recursivePins" | "isProjectContent">;
  graceMs: number;
  /** Part b on or off. */
  sweepUnrecorded: boolean;
  log: Logger;
  batchSize?: number;
  /** The grace periods' clock (tests move it); Date.now by default. */
  clock?: () => number;
}): Reconciler {
  const { pins, content, heldContent, node, graceMs, log } = deps;
  const clock = deps.clock ?? Date.now;
  const batchSize = Math.min(deps.batchSize ?? RECONCILE_BATCH, RECONCILE_BATCH);
  /** CID → when a round first saw it pinned without a live row. */
  const unrecordedSince = new Map<string, number>();
  /** Pins that are not a project's content (another user of the node): never touched. */
  const foreign = new Set<string>();

  /** Counts what a release came to; a reason to stop the round when the failure is not the content's. */
  async function released(
    f: ReconcileRound,
    ctx: { requestId: string },
    fileHash: string,
    release: () => Promise<ReleaseOutcome>,
  ): Promise<ReleaseOutcome | Skipped> {
    try {
      const outcome = await release();
      if (outcome === "unpinned") f.removed++;
      if (outcome === "late" || outcome === "failed") f.failed++;
      return outcome;
    } catch (err) {
      if (isReleaseUnanswered(err)) {
        log.warn(
          { err, requestId: ctx.requestId },
          "the projects service did not answer a release: round stopped",
        );
        return "projects service unavailable";
      }
      f.failed++;
      log.warn(
        { err, fileHash, requestId: ctx.requestId },
        "content not released; the next round tries again",
      );
      return isAppError(err) && err.retryable ? "IPFS or database unavailable" : "failed";
    }
  }

  /** Part a. */
  async function sweepRecorded(f: ReconcileRound, ctx: { requestId: string }): Promise<Skipped | undefined> {
    const cutoff = new Date(clock() - graceMs);
    let afterId = 0;
    for (;;) {
      const batch = await pins.live(afterId, batchSize, cutoff);
      if (batch.length === 0) return;
      afterId = batch[batch.length - 1]?.id ?? afterId;
      let held: Set<string>;
      try {
        held = new Set(
          await heldContent(
            batch.map((pin) => pin.fileHash),
            ctx,
          ),
        );
      } catch (err) {
        const away = isAppError(err) && (err.kind === "unavailable" || err.kind === "timeout");
        log[away ? "warn" : "error"](
          { err, requestId: ctx.requestId },
          "the projects service did not say which content it holds: nothing unpinned",
        );
        return "projects service unavailable";
      }
      f.checked += batch.length;
      for (const pin of batch) {
        if (held.has(pin.fileHash)) continue;
        f.orphans++;
        const outcome = await released(f, ctx, pin.fileHash, () =>
          content.release(pin.fileHash, ORPHAN_REASON, ctx, pin.id),
        );
        if (outcome === "projects service unavailable" || outcome === "IPFS or database unavailable")
          return outcome;
      }
      if (batch.length < batchSize) return;
    }
  }

  /** Part b, on the node's pins of a project's CID kind (fileHash → CID). */
  async function sweepUnrecordedPins(
    f: ReconcileRound,
    ctx: { requestId: string },
    ours: Map<string, string>,
  ): Promise<Skipped | undefined> {
    const hashes = [...ours.keys()];
    const recorded = new Set<string>();
    for (let i = 0; i < hashes.length; i += RECONCILE_BATCH) {
      for (const hash of await pins.liveAmong(hashes.slice(i, i + RECONCILE_BATCH))) recorded.add(hash);
    }
    const unrecorded = new Map([...ours].filter(([hash]) => !recorded.has(hash)).map(([h, cid]) => [cid, h]));
    for (const cid of unrecordedSince.keys()) if (!unrecorded.has(cid)) unrecordedSince.delete(cid);
    const now = clock();
    for (const [cid, fileHash] of unrecorded) {
      const since = unrecordedSince.get(cid);
      if (since === undefined) {
        if (unrecordedSince.size < MAX_REMEMBERED) unrecordedSince.set(cid, now);
        continue;
      }
      // Younger: possibly a write between the gateway's pinned add and the projects service's commit.
      if (now - since < graceMs) continue;
      if (!(await node.isProjectContent(CID.parse(cid)))) {
        unrecordedSince.delete(cid);
        if (foreign.size < MAX_REMEMBERED) foreign.add(cid);
        continue;
      }
      f.orphans++;
      const outcome = await released(f, ctx, fileHash, () =>
        content.release(fileHash, UNRECORDED_REASON, ctx, null),
      );
      if (outcome === "projects service unavailable" || outcome === "IPFS or database unavailable")
        return outcome;
      if (outcome === "held") {
        const row = { fileHash, cid, reason: RECORDED_REASON, fileBytes: null, imageBytes: null };
        if (await content.record(row, ctx)) {
          f.recorded++;
          log.warn(
            { fileHash, cid, requestId: ctx.requestId },
            "content a project holds was pinned without a record: recorded",
          );
        }
      }
      // Late or failed: remembered still, so the next round asks again without a new grace period.
      if (outcome !== "late" && outcome !== "failed") unrecordedSince.delete(cid);
    }
    return undefined;
  }

  /** Part c, against the node's pins of a project's CID kind (by fileHash); throws when the node is away. */
  async function repinMissing(f: ReconcileRound, ctx: { requestId: string }, pinned: Set<string>) {
    let afterId = 0;
    for (;;) {
      const batch = await pins.live(afterId, RECONCILE_BATCH);
      if (batch.length === 0) return;
      afterId = batch[batch.length - 1]?.id ?? afterId;
      for (const pin of batch) {
        if (pinned.has(pin.fileHash)) continue;
        try {
          if (await content.repin(pin)) f.repinned++;
        } catch (err) {
          if (!(isAppError(err) && (err.kind === "not_found" || err.kind === "timeout"))) throw err;
          f.missing++;
          log.error(
            { err, fileHash: pin.fileHash, cid: pin.cid, requestId: ctx.requestId },
            "content a project holds is missing on the node: it could not be pinned again",
          );
        }
      }
      if (batch.length < RECONCILE_BATCH) return;
    }
  }

  async function sweep(ctx: { requestId: string }): Promise<ReconcileRound> {
    const f = noFigures();
    try {
      let skipped = await sweepRecorded(f, ctx);
      const ours = new Map<string, string>();
      for (const cid of await node.recursivePins()) {
        if (foreign.has(cid)) continue;
        try {
          ours.set(fileHashOf(cid), cid);
        } catch {
          if (foreign.size < MAX_REMEMBERED) foreign.add(cid); // not a sha2-256 CIDv0: never ours
        }
      }
      if (!skipped && deps.sweepUnrecorded) skipped = await sweepUnrecordedPins(f, ctx, ours);
      // Pinning again unpins nothing: it runs also when the projects service is away.
      if (skipped !== "IPFS or database unavailable") await repinMissing(f, ctx, new Set(ours.keys()));
      return skipped ? { ...f, skipped } : f;
    } catch (err) {
      log.warn(
        { err, ...f, requestId: ctx.requestId },
        "reconciliation round stopped: IPFS or database unavailable",
      );
      return { ...f, skipped: "IPFS or database unavailable" };
    }
  }

  return {
    async round() {
      const ctx = { requestId: `reconcile-${randomUUID()}` };
      const started = performance.now();
      const outcome = await pins.exclusively(RECONCILE_LOCK, () => sweep(ctx));
      const figures: ReconcileRound = outcome.ran
        ? outcome.value
        : { ...noFigures(), skipped: "another replica is reconciling" };
      log.info(
        { ...figures, graceMs, ms: Math.round(performance.now() - started), requestId: ctx.requestId },
        "reconciliation round",
      );
      return figures;
    },
  };
}
