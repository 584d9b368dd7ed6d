import { randomUUID } from "node:crypto";
import { isAppError } from "@fundraise/protocol";
import type { Logger } from "@fundraise/service-kit";
import type { ContentService } from "./content.service.ts";
import type { PinRepository } from "./pin.repository.ts";

/** The unpin reason of content the reconciliation removes. */
export const ORPHAN_REASON = "orphan: no project holds it";

/** Held by the storage replica that reconciles; the others skip their round. */
export const RECONCILE_LOCK = "storage:reconcile";

/** The projects service's `heldContent` asks at most this many contents at once. */
export const RECONCILE_BATCH = 1000;

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
}): Reconciler {
  const { pins, content, heldContent, graceMs, log } = deps;
  const batchSize = Math.min(deps.batchSize ?? RECONCILE_BATCH, RECONCILE_BATCH);

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
      const outcome = await pins.exclusively(RECONCILE_LOCK, () => sweep(ctx));
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
