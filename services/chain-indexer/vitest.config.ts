import { defineProject } from "vitest/config";

export default defineProject({
  test: { name: "chain-indexer", include: ["src/**/*.test.ts"], testTimeout: 30_000, hookTimeout: 60_000 },
});
