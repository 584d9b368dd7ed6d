import { resolve } from "node:path";
import { defineConfig } from "vitest/config";

// `pnpm test:chaos`: the short chaos run on its own, after the rest of `pnpm test` (its twelve service
// processes hold 40–50 of Postgres's 100 connections). VITEST_JSON_REPORT=<file>: its counts go to
// <file>.chaos.json, which CI adds to the main report's.
const jsonReport = process.env.VITEST_JSON_REPORT;

export default defineConfig({
  test: {
    name: "chaos",
    root: import.meta.dirname,
    include: ["chaos.test.ts"],
    ...(jsonReport
      ? { reporters: ["default", "json"], outputFile: { json: resolve(`${jsonReport}.chaos.json`) } }
      : {}),
  },
});
