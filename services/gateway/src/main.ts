import { createAmqpBus } from "@fundraise/bus";
import { createLogger, createShutdown, exitOnSignals } from "@fundraise/service-kit";
import { Redis } from "ioredis";
import { buildGateway } from "./app.ts";
import { loadConfig } from "./config.ts";
import { buildInternalApp } from "./internal.ts";
import { createMetrics } from "./plugins/metrics.ts";
import { createReadinessCheck } from "./routes/health.ts";

const config = loadConfig();
const log = createLogger({ service: "gateway", level: config.log.level });
const shutdown = createShutdown(log);
exitOnSignals(shutdown, log);

if (
  config.corsOrigins === true &&
  !/^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:|\/|$)/.test(config.publicBaseUrl)
) {
  log.warn(
    { publicBaseUrl: config.publicBaseUrl },
    "CORS_ORIGINS is * on a public deployment: list the web client's origins",
  );
}

const redis = new Redis(config.redis.url, {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  lazyConnect: true,
});
redis.on("error", (err) => log.warn({ err }, "redis connection error"));
await redis.connect().catch((err: unknown) => log.warn({ err }, "redis not reachable yet; retrying"));
const bus = await createAmqpBus({
  url: config.amqp.url,
  service: "gateway",
  logger: log,
  prefetch: config.amqp.prefetch,
  journal: config.amqp.journal,
});
const metrics = createMetrics();
const app = await buildGateway({ config, bus, redis, log, metrics });
// Closed last-added first: stop accepting HTTP, then the bus, then Redis.
shutdown.add("redis", () => void redis.disconnect());
shutdown.add("bus", () => bus.close());
shutdown.add("http", () => app.close());

// Metrics and detailed readiness on their own port, never the public one. Not worth an outage: a
// port that cannot be bound is logged and the API runs without it.
if (config.metrics.port !== 0) {
  const internal = await buildInternalApp({
    metrics,
    readiness: createReadinessCheck({ bus, redis }),
    log: log.child({ listener: "internal" }),
  });
  shutdown.add("internal http", () => internal.close());
  await internal
    .listen({ port: config.metrics.port, host: config.metrics.host })
    .then((url) => log.info({ url: `${url}/metrics` }, "metrics listening"))
    .catch((err: unknown) =>
      log.error({ err, port: config.metrics.port }, "metrics port unavailable; set METRICS_PORT (0 = off)"),
    );
}

const address = await app.listen({ port: config.http.port, host: config.http.host });
log.info({ url: address, docs: `${address}/docs` }, "gateway listening");
