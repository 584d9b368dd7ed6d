import type { Bus } from "@fundraise/bus";
import { createInMemoryBus } from "@fundraise/bus/testing";
import { createKuboIpfs } from "@fundraise/ipfs";
import { AuthRpc, UsersRpc } from "@fundraise/protocol";
import { createProcessMetrics } from "@fundraise/service-kit";
import { silentLogger } from "@fundraise/service-kit/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildGateway } from "./app.ts";
import { loadConfig } from "./config.ts";
import { buildInternalApp } from "./internal.ts";
import { createMetrics } from "./plugins/metrics.ts";
import { createReadinessCheck } from "./routes/health.ts";
import type { Server } from "./server.ts";
import { createTestSigner, REDIS_URL } from "./test/harness.ts";
import { createMemoryLiveLog } from "./test/live-log.ts";

// Metrics and readiness details live on the internal port (main.ts), fed by the public app.
const redis = new Redis(REDIS_URL, { enableOfflineQueue: true, maxRetriesPerRequest: 1 });
const config = loadConfig({ REDIS_URL, REDIS_PREFIX: "test:internal:", LOG_LEVEL: "silent" });
const apps: Server[] = [];

async function system(bus: Bus) {
  const scrape = createProcessMetrics();
  const metrics = createMetrics(scrape.registry);
  const signer = await createTestSigner();
  // Neither uploads nor withHex are asked here: a client of a node that is not there.
  const ipfs = createKuboIpfs({ url: "http://127.0.0.1:9", timeoutMs: 100, readTimeoutMs: 100 });
  const liveLog = createMemoryLiveLog();
  const app = await buildGateway({ config, bus, redis, log: silentLogger(), metrics, ipfs, liveLog });
  const internal = await buildInternalApp({
    scrape,
    readiness: createReadinessCheck({ bus, redis }),
    log: silentLogger(),
  });
  apps.push(app, internal);
  return { app, internal, signer };
}

let up: Awaited<ReturnType<typeof system>>;
let down: Awaited<ReturnType<typeof system>>;

beforeAll(async () => {
  const bus = createInMemoryBus();
  await bus.serve(UsersRpc.count, async () => 3);
  up = await system(bus);
  await bus.serve(AuthRpc.jwks, async () => up.signer.jwks);
  down = await system({ ...createInMemoryBus(), isConnected: () => false });
});
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  redis.disconnect();
});

describe("the internal port", () => {
  it("serves the public app's request metrics", async () => {
    expect((await up.app.inject("/user/learnusercount")).statusCode).toBe(200);
    const res = await up.internal.inject("/metrics");
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toContain("text/plain");
    expect(res.body).toMatch(
      /^http_request_duration_seconds_count\{[^}]*method="GET",route="\/user\/learnusercount",status="200"\} 1$/m,
    );
    expect(res.body).toContain("process_cpu_seconds_total");
    // What every service reports, on the same registry.
    expect(res.body).toContain("# TYPE rpc_client_duration_seconds histogram");
    expect(res.body).toContain('db_errors_total{kind="connection"} 0');
  });

  it("tells readiness with its details; the public port says only ready or not", async () => {
    expect((await up.internal.inject("/readyz")).json()).toEqual({
      data: { broker: true, redis: true },
      success: true,
      message: null,
    });
    const internal = await down.internal.inject("/readyz");
    expect(internal.statusCode).toBe(503);
    expect(internal.json()).toEqual({ data: null, success: false, message: "not ready: broker unreachable" });
    const open = await down.app.inject("/readyz");
    expect(open.statusCode).toBe(503);
    expect(open.headers["x-error-code"]).toBe("SERVICE_UNAVAILABLE");
    expect(open.json()).toEqual({ data: null, success: false, message: "not ready" });
  });

  it("answers anything else with the envelope", async () => {
    const res = await up.internal.inject("/user/learnusercount");
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ data: null, success: false, message: "No route GET /user/learnusercount." });
  });
});

describe("configuration", () => {
  it("puts the internal port on loopback 9464 by default; 0 turns it off", () => {
    expect(loadConfig({}).metrics).toEqual({ port: 9464, host: "127.0.0.1" });
    expect(loadConfig({ METRICS_PORT: "0", METRICS_HOST: "0.0.0.0" }).metrics).toEqual({
      port: 0,
      host: "0.0.0.0",
    });
  });

  it("reads CORS_ORIGINS as a trimmed list, or * for any origin", () => {
    expect(loadConfig({}).corsOrigins).toBe(true);
    expect(loadConfig({ CORS_ORIGINS: "https://a.example, https://b.example," }).corsOrigins).toEqual([
      "https://a.example",
      "https://b.example",
    ]);
  });
});
