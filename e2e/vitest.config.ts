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
    testTimeout: 180_000,
    hookTimeout: 180_000,
  },
});
