import amqp from "amqplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AmqpBus, type BusMetrics, createAmqpBus } from "../src/index.ts";
import { inspectQueues } from "../src/metrics.ts";
import { createTestVhost, type TestVhost } from "../src/testing/index.ts";
import { rejection, TestEvents, TestRpc, testLogger } from "./helpers/index.ts";

// The bus's metric hooks and scrape-time queue inspection, on a real broker.
let vhost: TestVhost;
let client: AmqpBus;
let server: AmqpBus;
const observed: { side: string; route: string; outcome: string; seconds: number }[] = [];
const hooks = (side: string): BusMetrics => ({
  [side === "client" ? "rpcClient" : "rpcServer"]: (route: string, outcome: string, seconds: number) =>
    observed.push({ side, route, outcome, seconds }),
});

beforeAll(async () => {
  vhost = await createTestVhost();
  client = await createAmqpBus({
    url: vhost.url,
    service: "gateway",
    logger: testLogger(),
    metrics: hooks("client"),
  });
  server = await createAmqpBus({
    url: vhost.url,
    service: "users",
    logger: testLogger(),
    metrics: hooks("server"),
  });
  await server.serve(TestRpc.echo, async ({ text }, ctx) => ({ text, requestId: ctx.requestId }));
  await server.serve(TestRpc.fail, async () => {
    throw new Error("not an AppError");
  });
  await server.subscribe("users", TestEvents.happened, async () => undefined, { queueType: "classic" });
});
afterAll(async () => {
  await client?.close();
  await server?.close();
  await vhost?.dispose();
});

describe("RPC hooks", () => {
  it("report each call on both sides by RPC name and outcome: ok, the error kind, timeout", async () => {
    observed.length = 0;
    await client.call(TestRpc.echo, { text: "hi" });
    await rejection(client.call(TestRpc.fail, { how: "crash" }));
    await rejection(client.call(TestRpc.echo, { text: "x".repeat(101) }));
    const seen = observed.map(({ side, route, outcome }) => `${side} ${route} ${outcome}`).sort();
    expect(seen).toEqual([
      "client users.test.echo ok",
      // Refused before it left: the caller's own validation.
      "client users.test.echo validation",
      "client users.test.fail internal",
      "server users.test.echo ok",
      "server users.test.fail internal",
    ]);
    for (const { seconds } of observed) expect(seconds).toBeGreaterThanOrEqual(0);
  });
});

describe("inspectQueues", () => {
  it("reports depth and consumers of the process's queues and dead-letter queues", async () => {
    await client.publish(TestEvents.happened, { n: 1 });
    const report = await server.inspectQueues(2_000);
    expect(report.queues).toEqual(
      expect.arrayContaining([
        { queue: "users.rpc", messages: 0, consumers: 1 },
        expect.objectContaining({ queue: "users.users.test.happened", consumers: 1 }),
      ]),
    );
    expect(report.deadLetters).toEqual([
      { queue: "users.users.test.happened.dlq", messages: 0, consumers: 0 },
    ]);
  });

  it("a queue the broker does not know is unknown (null); the ones after it still answer", async () => {
    const connection = await amqp.connect(vhost.url);
    try {
      const stats = await inspectQueues(connection, ["no.such.queue", "users.rpc"], 2_000);
      expect(stats).toEqual([
        { queue: "no.such.queue", messages: null, consumers: null },
        { queue: "users.rpc", messages: 0, consumers: 1 },
      ]);
      // Without a connection (the broker is down): everything unknown, at once.
      expect(await inspectQueues(undefined, ["users.rpc"], 2_000)).toEqual([
        { queue: "users.rpc", messages: null, consumers: null },
      ]);
    } finally {
      await connection.close();
    }
  });
});
