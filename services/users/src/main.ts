import { createAmqpBus } from "@fundraise/bus";
import { createLogger, createShutdown, exitOnSignals } from "@fundraise/service-kit";
import { startUsersApp } from "./app.ts";
import { loadConfig } from "./config.ts";

const config = loadConfig();
const log = createLogger({ service: "users", level: config.log.level });
const shutdown = createShutdown(log);
exitOnSignals(shutdown, log);

const bus = await createAmqpBus({
  url: config.amqp.url,
  service: "users",
  logger: log,
  prefetch: config.amqp.prefetch,
  journal: config.amqp.journal,
});
try {
  const app = await startUsersApp({ config, log, bus });
  // Closed last-added first: stop taking messages, then the outbox relay and the database. Outbox rows
  // the relay could not publish any more stay committed and go out at the next start.
  shutdown.add("app", () => app.stop());
  shutdown.add("bus", () => bus.close());
} catch (err) {
  log.fatal({ err }, "users service failed to start");
  await bus.close();
  process.exit(1);
}
