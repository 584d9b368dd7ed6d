import { HTTP_STATUS_OF_KIND, isAppError } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AmqpBus, createAmqpBus } from "../src/index.ts";
import { type BrokerNode, startBrokerNode, waitFor } from "../src/testing/index.ts";
import { rejection, sleep, TestEvents, TestRpc, testLogger } from "./helpers/index.ts";

// The broker really stops and starts (`rabbitmqctl stop_app` / `start_app`): a RabbitMQ node of this
// file's own, so the shared local broker that other files use in parallel is never touched. (The outbox
// relay across a restart: packages/outbox/test/broker-restart.int.test.ts.)
let node: BrokerNode;
let client: AmqpBus;
let server: AmqpBus;
const log = testLogger();
/** Deliveries of TestEvents.happened to the subscriber, in arrival order. */
const deliveries: { n: number; messageId: string }[] = [];
let slowStarted = 0;
/** Ends the slow handler's wait early (it waits for the broker to stop, however long that takes). */
let releaseSlow: () => void = () => undefined;
const slowReleased = new Promise<void>((resolve) => {
  releaseSlow = resolve;
});

beforeAll(async () => {
  node = await startBrokerNode();
  const options = { url: node.url, logger: log, maxReconnectDelayMs: 300 };
  [client, server] = await Promise.all([
    // A publish waits this long for a broker that is away (long enough for a restart, on a busy machine too).
    createAmqpBus({ ...options, service: "gateway", publishTimeoutMs: 60_000 }),
    createAmqpBus({ ...options, service: "users" }),
  ]);
  await server.serve(TestRpc.echo, async ({ text }, ctx) => ({ text, requestId: ctx.requestId }));
  await server.serve(TestRpc.slow, async ({ ms }) => {
    slowStarted++;
    await Promise.race([sleep(ms), slowReleased]);
    return { waited: ms };
  });
  await server.subscribe("counter", TestEvents.happened, async ({ n }, ctx) => {
    deliveries.push({ n, messageId: ctx.messageId });
  });
}, 120_000);

afterAll(async () => {
  await client?.close();
  await server?.close();
  await node?.dispose();
});

const delivered = (n: number) => deliveries.filter((d) => d.n === n).length;

/**
 * Publishes a marker after everything under test was confirmed and waits for it: the subscription
 * queue is FIFO, so once the marker is in, every earlier message (and any duplicate of one) is too.
 */
async function drained(marker: number): Promise<void> {
  await client.publish(TestEvents.happened, { n: marker });
  await waitFor(() => delivered(marker) === 1, 10_000, `marker ${marker}`);
}

describe("the broker stops and starts", () => {
  it("fails calls at once with 503 while it is down; calls and subscribers work again once it is back", async () => {
    await expect(client.call(TestRpc.echo, { text: "before" }, { requestId: "r1" })).resolves.toEqual({
      text: "before",
      requestId: "r1",
    });
    // The handler outlasts the broker's stop (rabbitmqctl took over 5 s on a busy machine, and a 5 s handler
    // answered first); it is let go once the call failed.
    const inFlight = rejection(client.call(TestRpc.slow, { ms: 120_000 }, { timeoutMs: 180_000 }));
    await waitFor(() => slowStarted === 1, 5000, "the server to start the slow call");

    await node.stop();
    // The call in flight fails with the connection, not after its handler's 2 minutes or its timeout.
    const lost = await inFlight;
    releaseSlow();
    expect(isAppError(lost)).toBe(true);
    expect(lost).toMatchObject({ kind: "unavailable", code: "BROKER_UNAVAILABLE" });
    expect(HTTP_STATUS_OF_KIND.unavailable).toBe(503);
    await waitFor(() => !client.isConnected() && !server.isConnected(), 5000, "both buses to see the loss");

    // While it is down every call fails at once (the gateway answers 503), however long its timeout.
    for (const text of ["a", "b", "c"]) {
      const started = Date.now();
      const error = await rejection(client.call(TestRpc.echo, { text }, { timeoutMs: 10_000 }));
      expect(error).toMatchObject({ kind: "unavailable", code: "BROKER_UNAVAILABLE" });
      // At once, not after the call's 10 s: half of it tells them apart on a slow machine too.
      expect(Date.now() - started).toBeLessThan(5_000);
    }
    // A publish meanwhile waits for the broker instead of failing or being dropped.
    const base = deliveries.length;
    const during = client.publish(TestEvents.happened, { n: 1 });

    await node.start();
    await during;
    await waitFor(() => client.isConnected() && server.isConnected(), 10_000, "both buses to reconnect");
    // The server declared its RPC queue again (the broker dropped it with the stop) and consumes it.
    await expect(client.call(TestRpc.echo, { text: "after" }, { requestId: "r2" })).resolves.toEqual({
      text: "after",
      requestId: "r2",
    });
    // The subscriber consumes again: the event published while the broker was down and one after it.
    await client.publish(TestEvents.happened, { n: 2 });
    await drained(3);
    expect(deliveries.slice(base).map((d) => d.n)).toEqual([1, 2, 3]);
    // A real stop and start of a RabbitMQ node: seconds each here, many more on a busy machine.
  }, 150_000);
});
