import type { Logger } from "@fundraise/service-kit";

export type IndexerRole = "starting" | "standby" | "writer";

/** What `/readyz` says (service-kit's health server serves it). */
export interface Readiness {
  ready: boolean;
  detail?: Record<string, unknown>;
}

/**
 * How far the index is, for a person and for probes: backfill log lines, `/metrics`, `/readyz`, and the
 * `progress` RPC. The writer feeds it as it indexes; a standby from the database and the chain.
 */
export interface Progress {
  readonly chainId: number;
  readonly indexedBlock: number;
  /** -1 until the chain's head was read once. */
  readonly headBlock: number;
  role: IndexerRole;
  /** Calls `listener` after every change of `indexedBlock`, `headBlock` or `role`. */
  onChange(listener: () => void): void;
  sawHead(head: number): void;
  /** The cursor moved to `block`; `events` new logs were stored on the way. */
  indexed(block: number, events: number): void;
  /** The cursor moved back (a reorg). */
  rolledBack(block: number): void;
  /** A backfill line when one is due (every `intervalMs`), with rate and time left. */
  logIfDue(log: Logger): void;
  readiness(): Readiness;
  metrics(): string;
}

export function createProgress(options: {
  chainId: number;
  startBlock: number;
  confirmations: number;
  maxLagBlocks: number;
  intervalMs: number;
  now?: () => number;
}): Progress {
  const now = options.now ?? Date.now;
  let indexedBlock = options.startBlock - 1;
  let headBlock = -1;
  let eventsIndexed = 0;
  let reorgs = 0;
  // The window of the current rate: since the last progress line.
  let windowStart = now();
  let windowBlock = indexedBlock;
  let windowEvents = 0;
  let role: IndexerRole = "starting";
  const listeners: (() => void)[] = [];
  const changed = (before: unknown, after: unknown) => {
    if (before !== after) for (const listener of listeners) listener();
  };
  const target = () => Math.max(headBlock - options.confirmations, 0);
  const lag = () => (headBlock < 0 ? null : Math.max(target() - indexedBlock, 0));

  const progress: Progress = {
    chainId: options.chainId,
    get indexedBlock() {
      return indexedBlock;
    },
    get headBlock() {
      return headBlock;
    },
    get role() {
      return role;
    },
    set role(next) {
      const before = role;
      role = next;
      changed(before, role);
    },
    onChange(listener) {
      listeners.push(listener);
    },
    sawHead(head) {
      const before = headBlock;
      headBlock = head;
      changed(before, headBlock);
    },
    indexed(block, events) {
      const before = indexedBlock;
      indexedBlock = block;
      eventsIndexed += events;
      windowEvents += events;
      changed(before, indexedBlock);
    },
    rolledBack(block) {
      const before = indexedBlock;
      indexedBlock = block;
      reorgs += 1;
      changed(before, indexedBlock);
    },
    logIfDue(log) {
      const elapsedMs = now() - windowStart;
      if (elapsedMs < options.intervalMs) return;
      const remaining = lag();
      if (remaining !== null && remaining > 0) {
        const blocksPerSecond = ((indexedBlock - windowBlock) * 1000) / elapsedMs;
        const first = options.startBlock;
        const span = Math.max(target() - first + 1, 1);
        log.info(
          {
            block: indexedBlock,
            target: target(),
            percent: Math.round(((indexedBlock - first + 1) / span) * 1000) / 10,
            eventsPerSecond: Math.round((windowEvents * 1000) / elapsedMs),
            etaSeconds: blocksPerSecond > 0 ? Math.round(remaining / blocksPerSecond) : null,
          },
          "backfill progress",
        );
      }
      windowStart = now();
      windowBlock = indexedBlock;
      windowEvents = 0;
    },
    readiness() {
      const behind = lag();
      const detail = { role: progress.role, indexedBlock, headBlock, lagBlocks: behind };
      return { ready: behind !== null && behind <= options.maxLagBlocks, detail };
    },
    metrics() {
      const labels = `{chain_id="${options.chainId}"}`;
      const gauge = (name: string, help: string, value: number, type = "gauge") =>
        `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${name}${labels} ${value}`;
      return [
        gauge(
          "chain_indexer_indexed_block",
          "Last block indexed (its logs stored, its facts owed).",
          indexedBlock,
        ),
        gauge("chain_indexer_head_block", "Head block last seen on the chain (-1: not yet).", headBlock),
        gauge("chain_indexer_lag_blocks", "Blocks between the confirmed head and the index.", lag() ?? -1),
        gauge("chain_indexer_events_indexed_total", "Logs stored by this process.", eventsIndexed, "counter"),
        gauge("chain_indexer_reorgs_total", "Reorgs rolled back by this process.", reorgs, "counter"),
        gauge(
          "chain_indexer_writer",
          "1 while this instance holds the writer lock.",
          progress.role === "writer" ? 1 : 0,
        ),
      ]
        .join("\n")
        .concat("\n");
    },
  };
  return progress;
}
