import { defineConfig } from "vitest/config";

// One run covers every package and service; each has its own vitest.config.ts (its project).
export default defineConfig({
  test: {
    projects: ["packages/*/vitest.config.ts", "services/*/vitest.config.ts", "e2e/vitest.config.ts"],
  },
});
