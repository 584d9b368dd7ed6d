import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    name: "contracts",
    include: ["test/**/*.test.ts"],
    // Each test file starts its own anvil; the ABI freshness test may run solc once (~15 s) on a cold cache.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The tests wait on anvil as much as they compute, so two workers pay off even on two cores.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
