import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    name: "contracts",
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // Each test file starts its own anvil; the ABI freshness test may run solc once (~15 s) on a cold cache.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The tests wait on anvil as much as they compute, so two workers pay off even on two cores.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // Under CPU load (the whole suite on two cores) the first transaction after a time jump (`mineAt`, then
    // withDraw/manualFinish) has twice been mined as failed, once in OBDutchAuction and once in FCFSAuction;
    // alone, and four copies at once, they pass every time. Suspected: gas estimated on a block environment
    // from before the jump, where the auction had not ended. Until that is pinned down, a failed test gets
    // one more try; a real defect still fails twice.
    retry: 1,
  },
});
