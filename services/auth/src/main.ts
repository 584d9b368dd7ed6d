import { createAmqpBus } from "@fundraise/bus";
import { createLogger, createShutdown, exitOnSignals } from "@fundraise/service-kit";
import { startAuthApp } from "./app.ts";
import { loadConfig } from "./config.ts";

const config = loadConfig();
const log = createLogger({ service: "auth", level: config.log.level });
const shutdown = createShutdown(log);
exitOnSignals(shutdown, log);

const bus = await createAmqpBus({
  url: config.amqp.url,
  service: "auth",
  logger: log,
  prefetch: config.amqp.prefetch,
  journal: config.amqp.journal,
});
try {
  const app = await startAuthApp({ config, log, bus });
  // Closed last-added first: the outbox relay, then the bus (running handlers finish), then the rest.
  shutdown.add("app", () => app.stop());
  shutdown.add("bus", () => bus.close());
  shutdown.add("outbox relay", () => app.stopRelay());
} catch (err) {
  log.fatal({ err }, "auth service failed to start");
  await bus.close();
  process.exit(1);
}
