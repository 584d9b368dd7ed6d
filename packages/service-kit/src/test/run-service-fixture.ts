/**
 * A service run by `runService`, for run-service.int.test.ts: it serves one RPC whose handler takes a while,
 * and writes each shutdown step to stdout as it happens. AMQP_URL comes from the test; FAIL_START makes the
 * start fail after the app registered its resource.
 */
import { runService } from "../run-service.ts";
import { ExhaustedDatabaseRpc, SlowRpc } from "./fixture-rpc.ts";

const step = (name: string) => {
  process.stdout.write(`step:${name}\n`);
};

await runService({
  name: "fixture",
  loadConfig: () => ({
    amqp: { url: process.env.AMQP_URL as string, prefetch: 4, journal: false, connectTimeoutMs: 2_000 },
    log: { level: "silent" },
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
