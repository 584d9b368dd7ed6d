import { existsSync, readdirSync } from "node:fs";
import { availableParallelism } from "node:os";
import { basename, join, resolve } from "node:path";
import { defineConfig } from "vitest/config";

// `pnpm test:unit` (`pnpm test:unit:watch`): every test that needs no server. Each package's and service's
// project (its own vitest.config.ts, same name: `--project storage` works) without its `*.int.test.ts`
// files; no e2e/, no chaos. `pnpm test` runs these too, with the rest.

// Every server address a test or harness reads points at a closed port (or a missing program), so a test
// that reaches for one fails at once, naming it, instead of passing only where the servers run.
const nowhere = {
  DATABASE_URL: "postgres://unit@127.0.0.1:1/unit",
  TEST_DATABASE_ADMIN_URL: "postgres://unit@127.0.0.1:1/unit",
  PG_ADMIN_URL: "postgres://unit@127.0.0.1:1/unit",
  REDIS_URL: "redis://127.0.0.1:1",
  AMQP_URL: "amqp://unit:unit@127.0.0.1:1",
  RABBITMQCTL: "/nonexistent/rabbitmqctl (pnpm test:unit runs no broker)",
  CHAIN_RPC_URL: "http://127.0.0.1:1",
  ANVIL_BIN: "/nonexistent/anvil (pnpm test:unit runs no chain)",
  IPFS_API_URL: "http://127.0.0.1:1",
};

// One worker reused across a project's files (isolate: false): on two cores the run took 86 s of CPU with
// a fresh worker per file, 45 s without (most of it was importing ethers, fastify, MikroORM again and
// again). A project whose files mock a module that others import keeps a worker per file: the gateway
// (routes/access.test.ts mocks routes/define.ts).
const ISOLATED = new Set(["gateway"]);

const projectDirs = ["packages", "services"]
  .flatMap((dir) => readdirSync(dir).map((name) => join(dir, name)))
  .concat("scripts")
  .filter((dir) => existsSync(join(dir, "vitest.config.ts")));

// VITEST_JSON_REPORT=<file> (CI): the counts go to <file>.unit.json, which CI adds to the other runs'.
const jsonReport = process.env.VITEST_JSON_REPORT;

export default defineConfig({
  test: {
    ...(jsonReport
      ? { reporters: ["default", "json"], outputFile: { json: resolve(`${jsonReport}.unit.json`) } }
      : {}),
    projects: projectDirs.map((dir) => ({
      extends: `./${dir}/vitest.config.ts`,
      root: dir,
      test: {
        name: basename(dir),
        exclude: ["**/*.int.test.ts", "**/node_modules/**"],
        env: nowhere,
        isolate: ISOLATED.has(basename(dir)),
        // One value for every project (contracts' own config sets another): projects run as one group.
        maxWorkers: availableParallelism(),
      },
    })),
  },
});
