import { defineConfig } from "vitest/config";

// Every package and service, each with its own vitest.config.ts (its project): `--project <name>` runs one
// project's tests of both kinds. `pnpm test` runs the same files in two halves instead: vitest.unit.config.ts
// (no server, shared workers) first, then vitest.int.config.ts (the servers' files and e2e/).
// VITEST_JSON_REPORT=<file> adds a JSON report beside the console output (CI prints its counts).
const jsonReport = process.env.VITEST_JSON_REPORT;

export default defineConfig({
  test: {
    // Most files wait on Postgres, RabbitMQ, Redis or anvil far more than they compute: three files at a
    // time on two cores (vitest's default there is one) took the suite from 620 s to 444 s (509 s with e2e/'s files one at a time, as they must be). Vitest 5 runs
    // the projects' files with it only when it comes from the command line: `pnpm test:all` passes
    // `--maxWorkers=3` to vitest.int.config.ts (here alone, the gateway's files took 50 s, as with one worker; with the flag, 30 s).
    maxWorkers: 3,
    projects: [
      "packages/*/vitest.config.ts",
      "services/*/vitest.config.ts",
      "scripts/vitest.config.ts",
      "e2e/vitest.config.ts",
      "e2e/vitest.own.config.ts",
    ],
    ...(jsonReport ? { reporters: ["default", "json"], outputFile: { json: jsonReport } } : {}),
  },
});
