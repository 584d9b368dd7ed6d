import { randomUUID } from "node:crypto";
import { fileHashOf, type Ipfs } from "@fundraise/ipfs";
import { isAppError } from "@fundraise/protocol";
import type { Logger } from "@fundraise/service-kit";
import { CID } from "multiformats/cid";
import type { ContentService } from "./content.service.ts";
import type { PinRepository } from "./pin.repository.ts";

/** The unpin reason of content the reconciliation removes. */
export const ORPHAN_REASON = "orphan: no project holds it";

/** Held by the storage replica that reconciles; the others skip their round. */
export const RECONCILE_LOCK = "storage:reconcile";

/** The projects service's `heldContent` asks at most this many contents at once. */
export const RECONCILE_BATCH = 1000;

/** The reason of a row recorded for content the node pinned without one. */
export const ADOPTED_REASON = "adopted: pinned on the node without a record";

/** Unrecorded pins remembered between rounds, at most (a node with more is reconciled a part at a time). */
const MAX_REMEMBERED = 10_000;

/** One round's figures; `skipped` says why it stopped before looking at every candidate. */
export interface ReconcileRound {
  /** Live pins older than the grace period that the projects service was asked about. */
  checked: number;
  /** Of those, the ones no project holds. */
  orphans: number;
  /** Orphans unpinned and recorded (an orphan uploaded again meanwhile stays). */
  removed: number;
  /** Orphans whose removal failed (IPFS or the database); the next round tries again. */
  failed: number;
  /** Pins found on the node without a live row for a grace period, recorded now (reconciled later). */
  adopted?: number;
  skipped?:
    | "another replica is reconciling"
    | "projects service unavailable"
    | "IPFS or database unavailable";
}

export interface Reconciler {
  /** One round: never throws for the projects service or IPFS being away (it skips and says so). */
  round(): Promise<ReconcileRound>;
}

/**
 * Finds content pinned that no project holds (a crash between the upload and the projects service's
 * commit) and removes it. A pin is a candidate once its last upload is older than `graceMs`, longer than
 * any Add or Update can take, so content of an Add under way is never one. The projects service says which
 * candidates a project holds; when it does not answer, the round stops and unpins nothing (never unpin
 * when unsure). Each removal locks the live row and checks its age again under the lock: the same bytes
 * uploaded since the round looked (an Add that is about to commit them) make it young, and it stays. One
 * replica reconciles at a time (an advisory lock); a round that finds the lock taken does nothing.
 */
export function createReconciler(deps: {
  pins: PinRepository;
  content: ContentService;
  /** Asks the projects service which of these contents (at most `batchSize`) a project holds. */
  heldContent: (fileHashes: string[], ctx: { requestId: string }) => Promise<string[]>;
  graceMs: number;
  log: Logger;
  batchSize?: number;
  /** The node's pins, to find content pinned without any row; undefined: that search is off. */
  node?: Pick<Ipfs, "recursivePins" | "isProjectContent">;
  /** When a pin was first seen unrecorded, and how long ago (tests move it); Date.now by default. */
  clock?: () => number;
}): Reconciler {
  const { pins, content, heldContent, graceMs, log, node } = deps;
  const clock = deps.clock ?? Date.now;
  const batchSize = Math.min(deps.batchSize ?? RECONCILE_BATCH, RECONCILE_BATCH);
  /** CID → when a round first saw it pinned without a live row. */
  const unrecordedSince = new Map<string, number>();
  /** Pins that are not a project's content (another user of the node): never adopted. */
  const foreign = new Set<string>();

  /**
   * Content the node pins that no live row accounts for, seen so in a round at least `graceMs` before
   * (longer than an upload between its pin and its record), with a project's layout: recorded as live,
   * uploaded now. The orphan sweep then judges it like any other content, a grace period later, asking
   * the projects service first. Pins of other shapes (CIDv1, no `whitepaper` entry) are never touched.
   */
  async function adoptUnrecorded(ctx: { requestId: string }): Promise<number> {
    if (!node) return 0;
    const ours = new Map<string, string>();
    for (const cid of await node.recursivePins()) {
      if (foreign.has(cid)) continue;
      try {
        ours.set(fileHashOf(cid), cid);
      } catch {
        if (foreign.size < MAX_REMEMBERED) foreign.add(cid); // not a sha2-256 CIDv0: never ours
      }
    }
    const hashes = [...ours.keys()];
    const recorded = new Set<string>();
    for (let i = 0; i < hashes.length; i += RECONCILE_BATCH) {
      for (const hash of await pins.liveAmong(hashes.slice(i, i + RECONCILE_BATCH))) recorded.add(hash);
    }
    const unrecorded = new Set([...ours].filter(([hash]) => !recorded.has(hash)).map(([, cid]) => cid));
    for (const cid of unrecordedSince.keys()) if (!unrecorded.has(cid)) unrecordedSince.delete(cid);
    const now = clock();
    let adopted = 0;
    for (const cid of unrecorded) {
      const since = unrecordedSince.get(cid);
      if (since === undefined) {
        if (unrecordedSince.size < MAX_REMEMBERED) unrecordedSince.set(cid, now);
        continue;
      }
      if (now - since < graceMs) continue;
      if (!(await node.isProjectContent(CID.parse(cid)))) {
        unrecordedSince.delete(cid);
        if (foreign.size < MAX_REMEMBERED) foreign.add(cid);
        continue;
      }
      if (await content.adopt(cid, ADOPTED_REASON, ctx)) {
        adopted++;
        log.warn(
          { cid, requestId: ctx.requestId },
          "content pinned without a record: recorded for reconciliation",
        );
      }
      unrecordedSince.delete(cid);
    }
    return adopted;
  }

  async function sweep(ctx: { requestId: string }): Promise<ReconcileRound> {
    const figures: ReconcileRound = { checked: 0, orphans: 0, removed: 0, failed: 0 };
    const cutoff = new Date(Date.now() - graceMs);
    let afterId = 0;
    for (;;) {
      const batch = await pins.liveUploadedBefore(cutoff, afterId, batchSize);
      if (batch.length === 0) return figures;
      afterId = batch[batch.length - 1]?.id ?? afterId;
      const asked = batch.map((pin) => pin.fileHash);
      let held: Set<string>;
      try {
        held = new Set(await heldContent(asked, ctx));
      } catch (err) {
        const away = isAppError(err) && (err.kind === "unavailable" || err.kind === "timeout");
        log[away ? "warn" : "error"](
          { err, ...figures, requestId: ctx.requestId },
          "orphan reconciliation skipped: the projects service did not say which content it holds; nothing unpinned",
        );
        return { ...figures, skipped: "projects service unavailable" };
      }
      figures.checked += batch.length;
      for (const fileHash of asked) {
        if (held.has(fileHash)) continue;
        figures.orphans++;
        try {
          if (await content.removeOrphan(fileHash, cutoff, ORPHAN_REASON, ctx)) figures.removed++;
        } catch (err) {
          figures.failed++;
          log.warn(
            { err, fileHash, requestId: ctx.requestId },
            "orphan not removed; the next round tries again",
          );
          if (isAppError(err) && err.retryable)
            return { ...figures, skipped: "IPFS or database unavailable" };
        }
      }
      if (batch.length < batchSize) return figures;
    }
  }

  return {
    async round() {
      const ctx = { requestId: `reconcile-${randomUUID()}` };
      const started = performance.now();
      const outcome = await pins.exclusively(RECONCILE_LOCK, async () => {
        const swept = await sweep(ctx);
        if (swept.skipped || !node) return swept;
        try {
          return { ...swept, adopted: await adoptUnrecorded(ctx) };
        } catch (err) {
          log.warn(
            { err, requestId: ctx.requestId },
            "unrecorded pins not searched: IPFS or database unavailable",
          );
          return { ...swept, skipped: "IPFS or database unavailable" as const };
        }
      });
      const figures: ReconcileRound = outcome.ran
        ? outcome.value
        : { checked: 0, orphans: 0, removed: 0, failed: 0, skipped: "another replica is reconciling" };
      log.info(
        { ...figures, graceMs, ms: Math.round(performance.now() - started), requestId: ctx.requestId },
        "orphan reconciliation round",
      );
      return figures;
    },
  };
}
