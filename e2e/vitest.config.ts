import { defineProject } from "vitest/config";

export default defineProject({
  test: {
    name: "e2e",
    include: ["**/*.test.ts"],
    // The short chaos run holds half of Postgres's connections: it runs alone, after every other file
    // (chaos.vitest.config.ts, `pnpm test:chaos`).
    exclude: ["chaos.test.ts", "**/node_modules/**"],
    // One system for the files that can share it (shared.ts), started on first use.
    globalSetup: ["./global-setup.ts"],
    // Files on the shared system see each other's writes (an admin's stream, the hot lists' versions):
    // they run one at a time, after the other projects' files (which run three at a time).
    fileParallelism: false,
    sequence: { groupOrder: 1 },
    testTimeout: 180_000,
    hookTimeout: 180_000,
  },
});
