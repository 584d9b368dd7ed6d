import { defineProject } from "vitest/config";

export default defineProject({
  test: {
    name: "journal",
    include: ["test/**/*.test.ts"],
    // Integration files use the local RabbitMQ, a vhost each; the CLI test starts tsx processes.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
