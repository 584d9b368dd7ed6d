import { defineProject } from "vitest/config";

export default defineProject({
  test: {
    name: "client",
    include: ["test/**/*.test.ts"],
    // The staleness test builds the gateway and runs openapi-typescript (a few seconds on a cold cache).
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
