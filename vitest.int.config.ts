import { existsSync, readdirSync } from "node:fs";
import { basename, join } from "node:path";
import { defineConfig } from "vitest/config";

// The server half of `pnpm test` (after `pnpm test:unit`, which runs every other test once, on shared
// workers): each package's and service's `*.int.test.ts` files under its own project settings, then e2e/.
// `pnpm exec vitest run --project <name>` (vitest.config.ts) still runs one project's tests of both kinds.
// VITEST_JSON_REPORT=<file>: a JSON report beside the console output (CI adds up the runs' counts).
const jsonReport = process.env.VITEST_JSON_REPORT;

const projectDirs = ["packages", "services"]
  .flatMap((dir) => readdirSync(dir).map((name) => join(dir, name)))
  .concat("scripts")
  .filter((dir) => existsSync(join(dir, "vitest.config.ts")));

/**
 * A project's own configuration (`extends`), without its files that need no server: `exclude` takes every
 * `*.test.ts` whose name before it does not end in `.int`.
 * One worker reused across files (isolate: false), as in the unit run: a fresh worker per file imported
 * ethers, fastify and MikroORM again for each of the 110 files. The whole server half, quiet, one run
 * each on one machine: 1,051 s of CPU and 767 s with a worker per file, 877 s and 669 s without. Every
 * harness stops what it started in its `afterAll`; no server file mocks a module (bus's vhost test
 * resets its own imports and restores the environment).
 */
const integrationOf = (dir: string) => ({
  extends: `./${dir}/vitest.config.ts`,
  root: dir,
  test: { name: basename(dir), exclude: ["**/!(*.int).test.ts", "**/node_modules/**"], isolate: false },
});

export default defineConfig({
  test: {
    // As in vitest.config.ts: most files wait on the servers; three at a time on two cores.
    maxWorkers: 3,
    projects: [...projectDirs.map(integrationOf), "e2e/vitest.config.ts", "e2e/vitest.own.config.ts"],
    ...(jsonReport ? { reporters: ["default", "json"], outputFile: { json: jsonReport } } : {}),
  },
});
