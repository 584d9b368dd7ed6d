import { checkIpfs, createKuboIpfs, type Ipfs } from "@fundraise/ipfs";
import { isAppError } from "@fundraise/protocol";
import {
  type AppDeps,
  type Logger,
  processMetrics,
  type ServiceApp,
  watchRedis,
} from "@fundraise/service-kit";
import { Redis } from "ioredis";
import { buildGateway } from "./app.ts";
import type { GatewayConfig } from "./config.ts";
import { buildInternalApp } from "./internal.ts";
import { createAmqpLiveLog } from "./live/amqp-log.ts";
import { createMetrics } from "./plugins/metrics.ts";
import { createReadinessCheck } from "./routes/health.ts";

const LOCAL_URL = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:|\/|$)/;

/**
 * The gateway as a running service (runService's `start`): Redis, the app on the public port, metrics and
 * detailed readiness on the internal one. HTTP is its intake, closed first on shutdown; Redis and the
 * internal listener close last.
 */
export async function startGateway(deps: AppDeps<GatewayConfig>): Promise<ServiceApp> {
  const { config, log, bus, shutdown } = deps;
  if (config.corsOrigins === true && !LOCAL_URL.test(config.publicBaseUrl)) {
    log.warn(
      { publicBaseUrl: config.publicBaseUrl },
      "CORS_ORIGINS is * on a public deployment: list the web client's origins",
    );
  }
  const redis = new Redis(config.redis.url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    lazyConnect: true,
    // The session reads of concurrent requests go out in one write per event-loop turn.
    enableAutoPipelining: true,
  });
  // One line per burst of failed attempts while Redis is away, not one per attempt.
  watchRedis(redis, { log, url: config.redis.url });
  processMetrics().observeRedis(redis);
  shutdown.add("redis", () => redis.disconnect());
  // Not reachable yet: ioredis keeps trying in the background (watchRedis says so, once per burst).
  await redis.connect().catch(() => undefined);
  const ipfs = createKuboIpfs(config.ipfs);
  // The process's registry: the gateway's HTTP histogram beside what every service reports (bus, errors).
  const metrics = createMetrics(processMetrics().registry);
  const liveLog = createAmqpLiveLog({ url: config.amqp.url, log });
  // Start-up steps that wait on others run side by side: the node's CID check beside the routes'
  // compilation, the live log's connection and tail beside the internal port (a new replica's time).
  const [, app] = await Promise.all([
    checkNode(ipfs, log),
    buildGateway({ config, bus, redis, log, metrics, ipfs, liveLog }),
  ]);
  const liveStarted = app.live.start();
  liveStarted.catch(() => undefined); // awaited below, before the port opens

  // Metrics and detailed readiness on their own port, never the public one. Not worth an outage: a
  // port that cannot be bound is logged and the API runs without it.
  const internal =
    config.metrics.port === 0
      ? undefined
      : await buildInternalApp({
          scrape: processMetrics(),
          readiness: createReadinessCheck({ bus, redis }),
          log: log.child({ listener: "internal" }),
        });
  if (internal) shutdown.add("internal listener", () => internal.close());
  await internal
    ?.listen({ port: config.metrics.port, host: config.metrics.host })
    .then((url) => log.info({ url: `${url}/metrics` }, "metrics listening"))
    .catch((err: unknown) =>
      log.error({ err, port: config.metrics.port }, "metrics port unavailable; set METRICS_PORT (0 = off)"),
    );

  await liveStarted;
  const address = await app.listen({ port: config.http.port, host: config.http.host });
  log.info({ url: address, docs: `${address}/docs` }, "gateway listening");
  return { closeIntake: () => app.close() };
}

/**
 * The gateway adds uploads, so its node must give Kubo's CIDs: one with other import settings stops the
 * start. A node not reachable does not, nor is it waited for: everything but uploads and withHex works
 * meanwhile, and those answer 503 until it is back.
 */
export async function checkNode(ipfs: Ipfs, log: Logger): Promise<void> {
  try {
    const { version } = await checkIpfs(ipfs, 0, log);
    log.info({ version }, "IPFS API checked: Kubo's CIDs");
  } catch (error) {
    if (!isAppError(error) || !error.retryable) throw error;
    log.warn({ err: error }, "IPFS API not reachable: uploads answer 503 until it is");
  }
}
