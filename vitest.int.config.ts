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
 */
const integrationOf = (dir: string) => ({
  extends: `./${dir}/vitest.config.ts`,
  root: dir,
  test: { name: basename(dir), exclude: ["**/!(*.int).test.ts", "**/node_modules/**"] },
});

export default defineConfig({
  test: {
    // As in vitest.config.ts: most files wait on the servers; three at a time on two cores.
    maxWorkers: 3,
    projects: [...projectDirs.map(integrationOf), "e2e/vitest.config.ts", "e2e/vitest.own.config.ts"],
    ...(jsonReport ? { reporters: ["default", "json"], outputFile: { json: jsonReport } } : {}),
  },
});
