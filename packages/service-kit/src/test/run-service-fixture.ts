/**
 * A service run by `runService`, for run-service.int.test.ts: it serves one RPC whose handler takes a while,
 * and writes each shutdown step to stdout as it happens. AMQP_URL comes from the test; FAIL_START makes the
 * start fail after the app registered its resource; REDIS_URL gives it a Redis client (metrics count its errors);
 * FIXTURE_LOG_LEVEL turns its JSON log lines on (stdout); CONNECT_TIMEOUT_MS bounds its wait for the broker.
 */
import { Redis } from "ioredis";
import { processMetrics } from "../metrics.ts";
import { runService } from "../run-service.ts";
import { createSqlPool } from "../sql-pool.ts";
import { ExhaustedDatabaseRpc, SlowRpc, UnreachableDatabaseRpc } from "./fixture-rpc.ts";

const step = (name: string) => {
  process.stdout.write(`step:${name}\n`);
};

await runService({
  name: "fixture",
  loadConfig: () => ({
    amqp: {
      url: process.env.AMQP_URL as string,
      prefetch: 4,
      journal: false,
      ...(process.env.CONNECT_TIMEOUT_MS ? { connectTimeoutMs: Number(process.env.CONNECT_TIMEOUT_MS) } : {}),
    },
    log: { level: process.env.FIXTURE_LOG_LEVEL ?? "silent" },
    health: { port: Number(process.env.HEALTH_PORT ?? 0), host: "127.0.0.1" },
  }),
  async start({ bus, shutdown }) {
    await bus.serve(SlowRpc, async ({ ms }) => {
      step("handler started");
      await new Promise((resolve) => setTimeout(resolve, ms));
      step("handler finished");
      return "done" as const;
    });
    await bus.serve(ExhaustedDatabaseRpc, async () => {
      throw Object.assign(new Error("sorry, too many clients already"), { code: "53300" });
    });
    // Port 1: nothing listens there, every statement fails to connect.
    const deadPool = createSqlPool("postgres://postgres@127.0.0.1:1/none", { max: 1 });
    shutdown.add("dead pool", () => deadPool.end());
    await bus.serve(UnreachableDatabaseRpc, async () => {
      await deadPool.query("select 1");
      return null;
    });
    if (process.env.REDIS_URL) {
      const redis = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1, retryStrategy: () => 100 });
      redis.on("error", () => undefined);
      processMetrics().observeRedis(redis);
      shutdown.add("redis", () => redis.disconnect());
    }
    shutdown.add("app", () => step("app"));
    if (process.env.FAIL_START) throw new Error("the app failed half-way through its start");
    step("ready");
    return {
      closeIntake: async () => step("intake"),
      outbox: {
        relay: { runOnce: async () => 0, start: () => undefined, stop: async () => undefined },
        stop: async () => step("outbox relay"),
      },
      readiness: () => ({ ready: true, detail: { fixture: "fine" } }),
      metrics: () => "# TYPE fixture_calls counter\nfixture_calls 3",
    };
  },
});
