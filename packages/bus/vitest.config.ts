import { defineProject } from "vitest/config";

export default defineProject({
  test: {
    name: "bus",
    include: ["test/**/*.test.ts"],
    // Integration files share one local broker, each in its own vhost; a reconnect test waits on backoff.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
