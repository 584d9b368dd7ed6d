import { defineProject } from "vitest/config";
import { OWN_SYSTEM_FILES } from "./own-system.ts";

export default defineProject({
  test: {
    name: "e2e-own",
    include: OWN_SYSTEM_FILES,
    // Each file starts its processes on a database, vhost, Redis prefix, chain and ports of its own: they
    // run three at a time with the other projects' files (the group before the shared system's files).
    // Workers reused across files, as the services' server files (vitest.int.config.ts).
    isolate: false,
    testTimeout: 180_000,
    hookTimeout: 180_000,
  },
});
