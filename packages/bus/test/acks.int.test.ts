import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AmqpBus, createAmqpBus, rpcQueueOf } from "../src/index.ts";
import { createTestVhost, type TestVhost, waitFor } from "../src/testing/index.ts";
import { sleep, TestRpc, testLogger } from "./helpers/index.ts";

// Acknowledgements go out in batches (src/acks.ts); the broker is the judge: an ack it does not expect
// (twice, or an unknown tag) closes the channel, and one never sent holds a prefetch place forever.
let vhost: TestVhost;
let client: AmqpBus;
let server: AmqpBus;
const log = testLogger();
const handled = new Map<string, number>();
/** The slow request holds its prefetch place until the test has looked (a gate, not a delay a busy machine outlasts). */
let releaseSlow: () => void = () => undefined;
const slowGate = new Promise<void>((resolve) => {
  releaseSlow = resolve;
});

beforeAll(async () => {
  vhost = await createTestVhost();
  client = await createAmqpBus({ url: vhost.url, service: "gateway", logger: log });
  server = await createAmqpBus({ url: vhost.url, service: "users", logger: log, prefetch: 4 });
  await server.serve(TestRpc.echo, async ({ text, delayMs }) => {
    handled.set(text, (handled.get(text) ?? 0) + 1);
    if (text === "slow") await slowGate;
    if (delayMs) await sleep(delayMs);
    return { text, requestId: text };
  });
});

afterAll(async () => {
  await client?.close();
  await server?.close();
  await vhost?.dispose();
});

const queue = rpcQueueOf("users");

describe("batched acknowledgements of RPC requests", () => {
  it("acknowledges every request, also those finished ahead of a slower earlier one", async () => {
    // One slow request holds the first of 4 prefetch places while 40 fast ones pass it: they can only
    // pass if each is acknowledged without waiting for it.
    const slow = client.call(TestRpc.echo, { text: "slow" }, { timeoutMs: 60_000 });
    await waitFor(() => handled.has("slow"), 5_000, "the slow request to start");
    const fast = await Promise.all(
      Array.from({ length: 40 }, (_, i) => client.call(TestRpc.echo, { text: `fast-${i}` })),
    );
    expect(fast).toHaveLength(40);
    expect(await vhost.queueCounts(queue)).toMatchObject({ unacknowledged: 1 });
    releaseSlow();
    await slow;
    await waitFor(
      async () => (await vhost.queueCounts(queue)).unacknowledged === 0,
      // Each look is a rabbitmqctl call: a second, several on a busy machine.
      30_000,
      "no unacknowledged request",
    );
  });

  it("keeps the channel: bursts of concurrent requests, each handled once, all acknowledged", async () => {
    for (let round = 0; round < 5; round++) {
      const texts = Array.from({ length: 50 }, (_, i) => `burst-${round}-${i}`);
      await Promise.all(
        texts.map((text, i) => client.call(TestRpc.echo, { text, delayMs: i % 3 === 0 ? 5 : 0 })),
      );
      for (const text of texts) expect(handled.get(text)).toBe(1);
    }
    await waitFor(
      async () => (await vhost.queueCounts(queue)).unacknowledged === 0,
      // Each look is a rabbitmqctl call: a second, several on a busy machine.
      30_000,
      "no unacknowledged request",
    );
  });
});
