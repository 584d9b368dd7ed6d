import { defineProject } from "vitest/config";

export default defineProject({
  test: {
    name: "e2e",
    include: ["**/*.test.ts"],
    // One system for the files that can share it (shared.ts), started on first use.
    globalSetup: ["./global-setup.ts"],
    testTimeout: 180_000,
    hookTimeout: 180_000,
  },
});
