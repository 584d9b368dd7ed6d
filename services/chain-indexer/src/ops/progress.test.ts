import type { Logger } from "@fundraise/service-kit";
import { describe, expect, it, vi } from "vitest";
import { createProgress } from "./progress.ts";

const options = { chainId: 31337, startBlock: 101, confirmations: 2, maxLagBlocks: 5, intervalMs: 1000 };

describe("readiness", () => {
  it("is not ready before the head was read, nor while the lag exceeds the bound", () => {
    const progress = createProgress(options);
    expect(progress.readiness().ready).toBe(false);
    progress.sawHead(200);
    progress.indexed(150, 10);
    // Confirmed head 198, indexed 150: 48 blocks behind.
    expect(progress.readiness()).toEqual({
      ready: false,
      detail: { role: "starting", indexedBlock: 150, headBlock: 200, lagBlocks: 48 },
    });
    progress.indexed(193, 0);
    expect(progress.readiness().ready).toBe(true);
    progress.indexed(192, 0);
    expect(progress.readiness().ready).toBe(false);
  });
});

describe("metrics", () => {
  it("exposes indexed block, head, lag, events and the writer role as Prometheus lines", () => {
    const progress = createProgress(options);
    progress.sawHead(300);
    progress.indexed(250, 40);
    progress.indexed(290, 60);
    progress.role = "writer";
    const lines = progress.metrics().split("\n");
    expect(lines).toContain('chain_indexer_indexed_block{chain_id="31337"} 290');
    expect(lines).toContain('chain_indexer_head_block{chain_id="31337"} 300');
    expect(lines).toContain('chain_indexer_lag_blocks{chain_id="31337"} 8');
    expect(lines).toContain('chain_indexer_events_indexed_total{chain_id="31337"} 100');
    expect(lines).toContain('chain_indexer_writer{chain_id="31337"} 1');
    expect(lines).toContain("# TYPE chain_indexer_events_indexed_total counter");
  });
});

describe("backfill progress line", () => {
  it("says block, target, percentage, events/s and time left, at most once per interval", () => {
    let now = 0;
    const progress = createProgress({ ...options, now: () => now });
    const info = vi.fn();
    const log = { info } as unknown as Logger;
    progress.sawHead(1102);
    now = 500;
    progress.indexed(300, 1000);
    progress.logIfDue(log);
    expect(info).not.toHaveBeenCalled();
    now = 2000;
    progress.logIfDue(log);
    // 200 blocks and 1000 events in 2 s; 800 blocks left of the 1000 from 101 to the confirmed head 1100.
    expect(info).toHaveBeenCalledWith(
      { block: 300, target: 1100, percent: 20, eventsPerSecond: 500, etaSeconds: 8 },
      "backfill progress",
    );
    progress.indexed(1100, 0);
    now = 4000;
    progress.logIfDue(log);
    expect(info).toHaveBeenCalledTimes(1);
  });
});
