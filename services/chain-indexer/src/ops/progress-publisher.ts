import { type ChainProgress, chainProgressKey } from "@fundraise/protocol";
import type { Logger } from "@fundraise/service-kit";
import type { Progress } from "./progress.ts";

export interface ProgressPublisher {
  /** The figures or the role may have changed: writes now, or when a second has passed since the last write. */
  changed(): void;
  /** No more writes; waits for one under way. */
  stop(): Promise<void>;
}

/**
 * The active indexer's `indexedBlock` and `headBlock` in Redis for live clients: `chainProgressKey(prefix)`
 * holds `{"indexedBlock":n,"headBlock":m,"at":<epoch ms>}`. Only the writer writes, once the head is known,
 * at most once per `minIntervalMs` and only when a figure changed since its last write (a change inside the
 * interval is written when it ends). A failed write is logged (once per outage, then at debug) and tried
 * again with the next change or interval; it never reaches the indexing loop.
 */
export function createProgressPublisher(options: {
  redis: { set(key: string, value: string): Promise<unknown> };
  prefix: string;
  progress: Pick<Progress, "role" | "indexedBlock" | "headBlock">;
  log: Logger;
  minIntervalMs?: number;
  now?: () => number;
}): ProgressPublisher {
  const { redis, progress, log } = options;
  const key = chainProgressKey(options.prefix);
  const minIntervalMs = options.minIntervalMs ?? 1_000;
  const now = options.now ?? Date.now;
  /** What this process last wrote as the writer; null: nothing yet (or it stopped being the writer). */
  let written: { indexedBlock: number; headBlock: number } | null = null;
  let lastWriteAt = Number.NEGATIVE_INFINITY;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let writing: Promise<void> | undefined;
  let failing = false;
  let stopped = false;

  function changed(): void {
    if (progress.role !== "writer") {
      // Another process may write meanwhile: a writer again writes at once, whatever it wrote before.
      written = null;
      return;
    }
    // Nothing to say before the chain's head was read (headBlock -1).
    if (stopped || timer || writing || progress.headBlock < 0) return;
    if (written?.indexedBlock === progress.indexedBlock && written.headBlock === progress.headBlock) return;
    const wait = lastWriteAt + minIntervalMs - now();
    if (wait > 0) {
      timer = setTimeout(() => {
        timer = undefined;
        changed();
      }, wait);
      timer.unref();
      return;
    }
    write();
  }

  function write(): void {
    const figures = { indexedBlock: progress.indexedBlock, headBlock: progress.headBlock };
    const at = now();
    lastWriteAt = at;
    const value: ChainProgress = { ...figures, at };
    // Through a promise from the start: even a synchronous throw stays here, away from the indexing loop.
    writing = Promise.resolve()
      .then(() => redis.set(key, JSON.stringify(value)))
      .then(() => {
        written = figures;
        if (failing) log.info({ key }, "chain progress written to Redis again");
        failing = false;
      })
      .catch((err: unknown) => {
        if (failing) log.debug({ err, key }, "chain progress still not written to Redis");
        else log.warn({ err, key }, "chain progress not written to Redis; indexing goes on");
        failing = true;
      })
      .finally(() => {
        writing = undefined;
        // A change during the write (or a failed one) is written when the interval allows.
        changed();
      });
  }

  return {
    changed,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
      await writing;
    },
  };
}
