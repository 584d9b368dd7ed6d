import { defineProject } from "vitest/config";

export default defineProject({
  test: {
    name: "outbox",
    include: ["test/**/*.test.ts"],
    // Integration files use the local Postgres (a database each) and RabbitMQ (a vhost each).
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
