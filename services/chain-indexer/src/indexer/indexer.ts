import { createWaitingLog, outageReason } from "@fundraise/bus";
import { type ChainClient, ChainRpcError, type Deployment } from "@fundraise/contracts";
import type { Logger } from "@fundraise/service-kit";
import type pg from "pg";
import type { Progress } from "../ops/progress.ts";
import { fetchRange } from "./fetch-range.ts";
import { type BlockRef, createIndexStore, type IndexStore } from "./index-store.ts";
import { createRangeSizer } from "./range-sizer.ts";
import { acquireWriterLock } from "./writer-lock.ts";

export interface IndexerOptions {
  chain: ChainClient;
  deployment: Deployment;
  db: { url: string };
  log: Logger;
  progress: Progress;
  /** Reads the stored cursor (a standby keeps its progress fresh with it). */
  readCursor: () => Promise<number | null>;
  confirmations: number;
  reorgWindow: number;
  range: { min: number; max: number };
  pollIntervalMs: number;
  /** The node's new-head announcements: an idle indexer wakes at the next one (or at its next poll). */
  newHeads?: { next(): Promise<void> };
  /**
   * Told after every commit (and on idle polls) where the index stands and whether its logs changed: the
   * chain-read cache (reads/hot-keys.ts). Its failures never stop indexing.
   */
  committed?: { advance(cursor: number, changed: boolean): Promise<void> };
}

export interface Indexer {
  /** Stops after the range under way commits (or is abandoned) and lets the writer lock go. */
  stop(): Promise<void>;
}

/** Pause after a failure of the chain or the database before trying again. */
const FAILURE_PAUSE_MS = 1_000;

/**
 * The indexing loop: take the writer lock (or wait for it as a hot standby), then backfill from the
 * deployment's start block in bounded ranges and follow the head, checking on every step that the block
 * the index ends with is still the chain's; when it is not, roll back to the common ancestor.
 */
export function startIndexer(options: IndexerOptions): Indexer {
  const { chain, deployment, log, progress } = options;
  const lockKey = `chain-indexer:${deployment.chainId}:${deployment.registry.toLowerCase()}`;
  let stopping = false;
  let signalStop: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => {
    signalStop = resolve;
  });
  const pause = (ms: number) => Promise.race([new Promise((resolve) => setTimeout(resolve, ms)), stopped]);

  // A change the cache was not told of (it failed) is told with the next report.
  let untoldChange = false;
  // Once per outage: the idle loop reports every poll, and Redis away fails each report (watchRedis in
  // app.ts says that Redis is away, once per burst).
  let reportFailing = false;
  async function report(cursor: number, changed: boolean): Promise<void> {
    if (!options.committed) return;
    const change = changed || untoldChange;
    try {
      await options.committed.advance(cursor, change);
      untoldChange = false;
      reportFailing = false;
    } catch (err) {
      if (!reportFailing) {
        const reason = outageReason(err);
        log.warn(
          reason === undefined ? { err } : { reason },
          "chain-read cache not told of a commit; telling it later",
        );
      }
      reportFailing = true;
      untoldChange = untoldChange || change;
    }
  }

  async function refreshAsStandby(): Promise<void> {
    progress.role = "standby";
    const [head, cursor] = await Promise.all([chain.blockNumber(), options.readCursor()]);
    progress.sawHead(head);
    if (cursor !== null) progress.indexed(cursor, 0);
  }

  async function runAsWriter(client: pg.Client): Promise<void> {
    const store = createIndexStore(client, deployment.chainId);
    progress.role = "writer";
    let cursor: BlockRef = (await store.readCursor()) ?? { number: deployment.startBlock - 1, hash: null };
    let auctions = await store.knownAuctions();
    progress.indexed(cursor.number, 0);
    // A new writer knows nothing of what its predecessor told the cache: start it afresh.
    await report(cursor.number, true);
    log.info({ block: cursor.number, startBlock: deployment.startBlock }, "writer lock taken; indexing");
    const sizer = createRangeSizer(options.range);
    let caughtUp = false;
    // The chain node away: one line per burst of failed requests (no stack for a refused connection).
    const waitingForChain = createWaitingLog({ log, what: "the chain node" });

    while (!stopping) {
      let step: "indexed" | "idle" | "retry";
      try {
        const { head, block } = await chain.headAndBlock(Math.max(cursor.number, 0));
        progress.sawHead(head);
        if (cursor.hash !== null && block?.hash !== cursor.hash) {
          cursor = await rollBack(store, cursor);
          auctions = await store.knownAuctions();
          await report(cursor.number, true);
          continue;
        }
        const target = head - options.confirmations;
        if (target <= cursor.number) {
          if (!caughtUp)
            log.info({ block: cursor.number, head }, "caught up with the chain; following the head");
          caughtUp = true;
          step = "idle";
          // Keeps the cache's cursor alive while no block comes.
          await report(cursor.number, false);
        } else {
          const from = cursor.number + 1;
          const to = Math.min(target, from + sizer.size - 1);
          const range = await fetchRange(chain, deployment, { from, to, parentHash: cursor.hash, auctions });
          if (!range.consistent) {
            log.info({ from, to, reason: range.reason }, "range not consistent; checking for a reorg");
            step = "retry";
          } else {
            sizer.accepted();
            const merged = new Map([...auctions, ...range.newAuctions]);
            const next = { number: range.to.number, hash: range.to.hash };
            const { stored, facts } = await store.commitRange({
              logs: range.logs,
              cursor: next,
              blocks: range.blocks,
              // The window below the head, and always the cursor's own block (the next step checks it).
              keepFrom: Math.min(head - options.reorgWindow, next.number),
              auctions: merged,
            });
            cursor = next;
            auctions = merged;
            progress.indexed(cursor.number, stored);
            await report(cursor.number, stored > 0);
            if (stored > 0) log.debug({ from, to, stored, facts }, "range indexed");
            step = "indexed";
          }
        }
      } catch (error) {
        if (!(error instanceof ChainRpcError)) throw error;
        if (error.refused && sizer.refused()) {
          log.debug({ err: error, range: sizer.size }, "provider refused the range; shrinking it");
          continue;
        }
        waitingForChain.failed(error);
        step = "retry";
      }
      if (step !== "retry") waitingForChain.connected();
      progress.logIfDue(log);
      if (step === "idle") {
        await Promise.race([
          pause(options.pollIntervalMs),
          ...(options.newHeads ? [options.newHeads.next()] : []),
        ]);
      } else if (step === "retry") await pause(Math.min(options.pollIntervalMs, FAILURE_PAUSE_MS));
    }
  }

  /** The common ancestor: the highest kept block whose hash the chain still has. */
  async function rollBack(store: IndexStore, cursor: BlockRef): Promise<BlockRef> {
    const kept = await store.storedBlocks();
    let ancestor: BlockRef | undefined;
    for (let i = 0; i < kept.length && !ancestor; i += 50) {
      const slice = kept.slice(i, i + 50);
      const onChain = await chain.blocks(slice.map((b) => b.number));
      ancestor = slice.find((b, j) => onChain[j]?.hash === b.hash);
    }
    if (!ancestor) {
      // Deeper than the kept window: start again below the oldest kept block, unchecked.
      const oldest = kept.at(-1)?.number ?? deployment.startBlock;
      ancestor = { number: Math.max(oldest - 1, deployment.startBlock - 1), hash: null };
      log.error({ block: ancestor.number }, "reorg deeper than CHAIN_REORG_WINDOW; re-indexing from there");
    }
    const { removed, retracted } = await store.rollback(ancestor);
    progress.rolledBack(ancestor.number);
    log.warn(
      { from: cursor.number, ancestor: ancestor.number, removedLogs: removed, retractedFacts: retracted },
      "chain reorganised: rolled back to the common ancestor",
    );
    return ancestor;
  }

  // The database away: one line per burst of attempts to take the writer lock again, not one per attempt.
  const waitingForDatabase = createWaitingLog({ log, what: "the database", url: options.db.url });
  const loop = (async () => {
    while (!stopping) {
      let client: pg.Client | null = null;
      try {
        client = await acquireWriterLock({
          url: options.db.url,
          key: lockKey,
          log,
          pollMs: Math.max(options.pollIntervalMs, 500),
          whileWaiting: refreshAsStandby,
          stopped,
        });
        if (!client) break;
        waitingForDatabase.connected();
        await runAsWriter(client);
      } catch (error) {
        if (outageReason(error) !== undefined) waitingForDatabase.failed(error);
        else log.error({ err: error }, "indexing failed; starting over");
        await pause(FAILURE_PAUSE_MS);
      } finally {
        progress.role = "starting";
        // Ending the session frees the lock for a standby.
        await client?.end().catch(() => undefined);
      }
    }
  })();

  return {
    async stop() {
      stopping = true;
      signalStop();
      await loop;
    },
  };
}
