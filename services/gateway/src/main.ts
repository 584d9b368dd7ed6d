import { createAmqpBus } from "@fundraise/bus";
import { createLogger, createShutdown, exitOnSignals } from "@fundraise/service-kit";
import { Redis } from "ioredis";
import { buildGateway } from "./app.ts";
import { loadConfig } from "./config.ts";

const config = loadConfig();
const log = createLogger({ service: "gateway", level: config.log.level });
const shutdown = createShutdown(log);
exitOnSignals(shutdown, log);

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
const app = await buildGateway({ config, bus, redis, log });
// Closed last-added first: stop accepting HTTP, then the bus, then Redis.
shutdown.add("redis", () => void redis.disconnect());
shutdown.add("bus", () => bus.close());
shutdown.add("http", () => app.close());

const address = await app.listen({ port: config.http.port, host: config.http.host });
log.info({ url: address, docs: `${address}/docs` }, "gateway listening");
