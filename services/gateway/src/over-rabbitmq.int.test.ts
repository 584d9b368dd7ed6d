import { type AmqpBus, createAmqpBus } from "@fundraise/bus";
import { createTestVhost, type TestVhost, waitFor } from "@fundraise/bus/testing";
import { ChainRpc, UsersRpc } from "@fundraise/protocol";
import { silentLogger } from "@fundraise/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "./test/harness.ts";

// The gateway on the real broker, answered by a second process-like bus that serves stand-in handlers.
let vhost: TestVhost;
let gatewayBus: AmqpBus;
let serviceBus: AmqpBus;
let h: Harness;
let count = 0;

beforeAll(async () => {
  vhost = await createTestVhost("gateway");
  [gatewayBus, serviceBus] = await Promise.all([
    // A 1 s default deadline: the 504 case waits for it.
    createAmqpBus({
      url: vhost.url,
      service: "gateway",
      logger: silentLogger(),
      maxReconnectDelayMs: 500,
      defaultTimeoutMs: 1_000,
    }),
    // Its whitelisted handler never answers (the 504 case): closing does not wait long for it.
    createAmqpBus({
      url: vhost.url,
      service: "stand-in",
      logger: silentLogger(),
      maxReconnectDelayMs: 500,
      closeTimeoutMs: 500,
    }),
  ]);
  await serviceBus.serve(UsersRpc.count, async () => count);
  await serviceBus.serve(ChainRpc.whitelisted, () => new Promise(() => {}));
  h = await createHarness({}, gatewayBus);
});

afterAll(async () => {
  await h?.close();
  await Promise.all([gatewayBus?.close(), serviceBus?.close()]);
  await vhost?.dispose();
});

const get = (url: string) => h.app.inject({ method: "GET", url });

describe("the gateway over RabbitMQ", () => {
  it("round-trips a route through the broker", async () => {
    count = 3;
    const res = await get("/user/learnusercount");
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: 3, success: true, message: null });
  });

  it("answers 503 at once for a service with no running instance", async () => {
    const started = Date.now();
    const res = await get("/EventDebug/Debug");
    expect(res.statusCode).toBe(503);
    expect(res.headers["x-error-code"]).toBe("SERVICE_UNAVAILABLE");
    expect(res.json()).toEqual({
      data: null,
      success: false,
      message: "The chain service is not available.",
    });
    // The status tells it from the 1 s deadline's 504; this only says it did not wait for anything else.
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("answers 504 when the service does not answer within the deadline", async () => {
    const res = await get("/EventDebug/Whitelisted/0x5B38Da6a701c568545dCfcB03FcB875f56beddC4");
    expect(res.statusCode).toBe(504);
    expect(res.headers["x-error-code"]).toBe("RPC_TIMEOUT");
  });

  it("answers 503 while the broker is away, and recovers without a restart once it is back", async () => {
    // Connections dropped and refused until allowAccess(): the gateway is certainly without a broker.
    await vhost.denyAccess();
    try {
      await vhost.dropConnections("test: connection loss");
      await waitFor(() => !gatewayBus.isConnected(), 10_000, "the gateway to see the loss");
      // rules.md §1.7: a dependency (the broker) is unavailable → 503 with the envelope, at once.
      const started = Date.now();
      const during = await get("/user/learnusercount");
      // At once, not after the bus's 10 s wait for the broker: half of it tells them apart on a slow machine.
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(during.statusCode).toBe(503);
      expect(during.headers["x-error-code"]).toBe("BROKER_UNAVAILABLE");
      expect(during.json()).toEqual({
        data: null,
        success: false,
        message: "The message broker is not reachable.",
      });
      // Readiness says so too, without details (rules.md §7.7).
      const ready = await get("/readyz");
      expect(ready.statusCode).toBe(503);
      expect(ready.json()).toEqual({ data: null, success: false, message: "not ready" });
    } finally {
      await vhost.allowAccess();
    }
    await waitFor(async () => (await get("/user/learnusercount")).statusCode === 200, 20_000, "recovery");
    await waitFor(() => gatewayBus.isConnected() && serviceBus.isConnected(), 20_000, "reconnection");
    expect((await get("/readyz")).statusCode).toBe(200);
    count = 4;
    expect((await get("/user/learnusercount")).json()).toEqual({ data: 4, success: true, message: null });
  });
});
