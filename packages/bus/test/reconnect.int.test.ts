import { isAppError } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AmqpBus, createAmqpBus } from "../src/index.ts";
import { createTestVhost, type TestVhost, waitFor } from "../src/testing/index.ts";
import { rejection, sleep, TestEvents, TestRpc, testLogger } from "./helpers/index.ts";

let vhost: TestVhost;
let client: AmqpBus;
let server: AmqpBus;
const log = testLogger();
const received = new Map<number, number>();
let slowStarted = 0;
/** Ends the slow handlers' waits early (they wait for the connections to drop, however long that takes). */
let releaseSlow: () => void = () => undefined;
let slowReleased = new Promise<void>((resolve) => {
  releaseSlow = resolve;
});

beforeAll(async () => {
  vhost = await createTestVhost();
  const options = { url: vhost.url, logger: log, maxReconnectDelayMs: 500, publishTimeoutMs: 15_000 };
  client = await createAmqpBus({ ...options, service: "gateway" });
  server = await createAmqpBus({ ...options, service: "users" });
  await server.serve(TestRpc.echo, async ({ text }, ctx) => ({ text, requestId: ctx.requestId }));
  await server.serve(TestRpc.slow, async ({ ms }) => {
    slowStarted++;
    await Promise.race([sleep(ms), slowReleased]);
    return { waited: ms };
  });
  await server.subscribe("counter", TestEvents.happened, async ({ n }) => {
    received.set(n, (received.get(n) ?? 0) + 1);
  });
});

afterAll(async () => {
  await client?.close();
  await server?.close();
  await vhost?.dispose();
});

async function bothConnected(): Promise<void> {
  await waitFor(() => client.isConnected() && server.isConnected(), 15_000, "both buses reconnected");
}

describe("connection loss", () => {
  it("fails in-flight calls at once with BROKER_UNAVAILABLE, then recovers", async () => {
    const before = slowStarted;
    const started = Date.now();
    // The handler outlasts the drop (rabbitmqctl may take seconds on a busy machine; a 5 s handler could
    // answer first); it is let go once the call failed.
    const call = rejection(client.call(TestRpc.slow, { ms: 120_000 }, { timeoutMs: 60_000 }));
    await waitFor(() => slowStarted > before, 5000, "the server to start the call");
    await vhost.dropConnections();
    const error = await call;
    releaseSlow();
    slowReleased = new Promise<void>((resolve) => {
      releaseSlow = resolve;
    });
    expect(isAppError(error)).toBe(true);
    expect(error).toMatchObject({ kind: "unavailable", code: "BROKER_UNAVAILABLE" });
    // Not the 60 s timeout: the loss itself fails the call (half of it tells them apart on a slow machine).
    expect(Date.now() - started).toBeLessThan(30_000);

    await bothConnected();
    // The server re-declared its queue and consumer; the client its reply consumer.
    await expect(client.call(TestRpc.echo, { text: "back" }, { requestId: "after" })).resolves.toEqual({
      text: "back",
      requestId: "after",
    });
  }, 90_000);

  it("fails calls fast and bounds publishes while the broker stays away", async () => {
    const lonely = await createAmqpBus({
      url: vhost.url,
      service: "projects",
      logger: log,
      maxReconnectDelayMs: 300,
      publishTimeoutMs: 1500,
    });
    try {
      await vhost.denyAccess();
      await vhost.dropConnections();
      await waitFor(() => !lonely.isConnected(), 5000, "the bus to notice the loss");

      const started = Date.now();
      const callError = await rejection(lonely.call(TestRpc.echo, { text: "x" }, { timeoutMs: 10_000 }));
      expect(callError).toMatchObject({ kind: "unavailable", code: "BROKER_UNAVAILABLE" });
      // At once, not after the call's 10 s: half of it tells them apart on a slow machine too.
      expect(Date.now() - started).toBeLessThan(5_000);

      const publishError = await rejection(lonely.publish(TestEvents.happened, { n: -1 }));
      expect(publishError).toMatchObject({ kind: "unavailable", code: "BROKER_UNAVAILABLE" });
    } finally {
      await vhost.allowAccess();
    }
    await waitFor(() => lonely.isConnected(), 15_000, "the bus to come back");
    await bothConnected();
    await expect(lonely.call(TestRpc.echo, { text: "again" })).resolves.toMatchObject({ text: "again" });
    await lonely.close();
  });

  it("loses no event when the connection drops mid-traffic", async () => {
    await bothConnected();
    const base = 10_000;
    const publishes: Promise<void>[] = [];
    let dropDone = false;
    let sawDisconnected = false;
    let sent = 0;
    let sentAfterDrop = 0;
    // Traffic before, during and after the drop: rabbitmqctl takes a while, so publish until it is done.
    for (; sent < 50; sent++) publishes.push(client.publish(TestEvents.happened, { n: base + sent }));
    const dropped = vhost.dropConnections().then(() => {
      dropDone = true;
    });
    while (sentAfterDrop < 100) {
      publishes.push(client.publish(TestEvents.happened, { n: base + sent }));
      sent++;
      if (dropDone) sentAfterDrop++;
      if (!client.isConnected()) sawDisconnected = true;
      await sleep(5);
    }
    await dropped;
    const results = await Promise.allSettled(publishes);
    expect(sawDisconnected).toBe(true);
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    const all = Array.from({ length: sent }, (_, i) => base + i);
    await waitFor(() => all.every((n) => received.has(n)), 20_000, "every event to arrive");
    // At-least-once: a redelivery after the drop is allowed, a loss is not.
    expect(all.filter((n) => !received.has(n))).toEqual([]);
    await bothConnected();
    await expect(client.call(TestRpc.echo, { text: "still" })).resolves.toMatchObject({ text: "still" });
  });
});

describe("close", () => {
  it("waits for running handlers, answers them, and is idempotent", async () => {
    const instance = await createAmqpBus({ url: vhost.url, service: "storage", logger: log });
    const Slow = { ...TestRpc.slow, name: "storage.test.slow", service: "storage" as const };
    let started = false;
    let finished = false;
    await instance.serve(Slow, async ({ ms }) => {
      started = true;
      await sleep(ms);
      finished = true;
      return { waited: ms };
    });
    const call = client.call(Slow, { ms: 400 }, { timeoutMs: 5000 });
    await waitFor(() => started, 5000, "the handler to start");
    const closing = instance.close();
    const again = instance.close();
    await expect(call).resolves.toEqual({ waited: 400 });
    await closing;
    await again;
    expect(finished).toBe(true);
    expect(instance.isConnected()).toBe(false);
    await expect(instance.publish(TestEvents.happened, { n: 1 })).rejects.toMatchObject({
      kind: "unavailable",
    });
  });
});
