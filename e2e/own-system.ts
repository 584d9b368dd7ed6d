/**
 * The e2e files that start a system of their own (`startSystem`, or `pnpm start` as a user runs it) and
 * never ask for the shared one: they meet no other file's writes, so they run beside the packages' and
 * services' files, three at a time, instead of one at a time after them (e2e/vitest.own.config.ts).
 * A file missing here runs with the shared-system files: correct, only slower.
 */
export const OWN_SYSTEM_FILES = [
  "built.test.ts",
  "content-faults.test.ts",
  "env-example.test.ts",
  "live-faults.test.ts",
  "reorg.test.ts",
  "reply-cut.test.ts",
  "start.test.ts",
  "tracing.test.ts",
  "uploads.test.ts",
];
