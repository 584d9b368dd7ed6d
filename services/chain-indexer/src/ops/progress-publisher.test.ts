import type { Logger } from "@fundraise/service-kit";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createProgress } from "./progress.ts";
import { createProgressPublisher } from "./progress-publisher.ts";

const options = { chainId: 31337, startBlock: 101, confirmations: 0, maxLagBlocks: 5, intervalMs: 1000 };

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

function setUp(set: (key: string, value: string) => Promise<unknown> = async () => "OK") {
  const progress = createProgress(options);
  const redis = { set: vi.fn(set) };
  const log = { warn: vi.fn(), info: vi.fn(), debug: vi.fn() };
  const publisher = createProgressPublisher({
    redis,
    prefix: "p:",
    progress,
    log: log as unknown as Logger,
  });
  progress.onChange(publisher.changed);
  const values = () => redis.set.mock.calls.map(([key, value]) => [key, JSON.parse(value)]);
  return { progress, redis, log, publisher, values };
}

describe("chain progress in Redis", () => {
  it("is written by the writer alone, at once, as {indexedBlock, headBlock, at}", async () => {
    const { progress, values } = setUp();
    progress.role = "standby";
    progress.sawHead(200);
    progress.indexed(150, 0);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(values()).toEqual([]);
    progress.role = "writer";
    await vi.advanceTimersByTimeAsync(0);
    expect(values()).toEqual([["p:chain:progress", { indexedBlock: 150, headBlock: 200, at: 1_005_000 }]]);
  });

  it("at most once a second and only when a figure changed; the last change is written", async () => {
    const { progress, values } = setUp();
    progress.sawHead(200);
    progress.role = "writer";
    await vi.advanceTimersByTimeAsync(0);
    for (let block = 101; block <= 200; block++) {
      progress.indexed(block, 1);
      await vi.advanceTimersByTimeAsync(15); // 1.5 s in all
    }
    await vi.advanceTimersByTimeAsync(5_000);
    expect(values().map(([, v]) => v)).toEqual([
      { indexedBlock: 100, headBlock: 200, at: 1_000_000 },
      { indexedBlock: 167, headBlock: 200, at: 1_001_000 },
      { indexedBlock: 200, headBlock: 200, at: 1_002_000 },
    ]);
    progress.sawHead(200);
    progress.indexed(200, 0);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(values()).toHaveLength(3);
  });

  it("logs a Redis failure with the error as err, never throws, and writes once Redis is back", async () => {
    const error = new Error("Connection is closed.");
    let down = true;
    const { progress, log, values } = setUp(async () => {
      if (down) throw error;
      return "OK";
    });
    progress.sawHead(130);
    progress.role = "writer";
    expect(() => progress.indexed(120, 3)).not.toThrow();
    await vi.advanceTimersByTimeAsync(3_500);
    expect(log.warn).toHaveBeenCalledTimes(1);
    expect(log.warn).toHaveBeenCalledWith(
      { err: error, key: "p:chain:progress" },
      "chain progress not written to Redis; indexing goes on",
    );
    expect(log.debug).toHaveBeenCalled();
    down = false;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(values().at(-1)?.[1]).toMatchObject({ indexedBlock: 120, headBlock: 130 });
    expect(log.info).toHaveBeenCalledWith(
      { key: "p:chain:progress" },
      "chain progress written to Redis again",
    );
  });

  it("writes nothing before the head is known, nor once stopped", async () => {
    const { progress, publisher, values } = setUp();
    progress.role = "writer";
    progress.indexed(120, 0);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(values()).toEqual([]);
    progress.sawHead(140);
    await vi.advanceTimersByTimeAsync(0);
    progress.indexed(130, 0);
    await publisher.stop();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(values()).toHaveLength(1);
  });
});
