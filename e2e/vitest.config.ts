import { defineProject } from "vitest/config";
import { OWN_SYSTEM_FILES } from "./own-system.ts";

export default defineProject({
  test: {
    name: "e2e",
    include: ["**/*.test.ts"],
    // The short chaos run holds half of Postgres's connections: it runs alone, after every other file
    // (chaos.vitest.config.ts, `pnpm test:chaos`).
    // The files with a system of their own are the e2e-own project's (vitest.own.config.ts).
    exclude: ["chaos.test.ts", ...OWN_SYSTEM_FILES, "**/node_modules/**"],
    // One system for the files that can share it (shared.ts), started on first use.
    globalSetup: ["./global-setup.ts"],
    // Files on the shared system see each other's writes (an admin's stream, the hot lists' versions):
    // they run one at a time, after the other projects' files (which run three at a time). Two systems,
    // a worker each, were tried: 279 s for these files against 260 s on one, the race files twice as
    // long side by side (their processes fill both cores); with the services' pools of ten connections
    // the two systems reached 104 of Postgres's 100 (refused), with four 70.
    fileParallelism: false,
    sequence: { groupOrder: 1 },
    // Workers reused across files, as the services' server files (vitest.int.config.ts).
    isolate: false,
    testTimeout: 180_000,
    hookTimeout: 180_000,
  },
});
