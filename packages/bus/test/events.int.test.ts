import { errors } from "@fundraise/protocol";
import amqp, { type ChannelModel, type GetMessage } from "amqplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeBody } from "../src/codec.ts";
import { type AmqpBus, createAmqpBus, deadLetterQueueOf, Header, subscriptionQueueOf } from "../src/index.ts";
import { createTestVhost, type TestVhost, waitFor } from "../src/testing/index.ts";
import { TestEvents, testLogger } from "./helpers/index.ts";

let vhost: TestVhost;
let publisher: AmqpBus;
let consumer: AmqpBus;
let raw: ChannelModel;
const log = testLogger();

beforeAll(async () => {
  vhost = await createTestVhost();
  publisher = await createAmqpBus({ url: vhost.url, service: "users", logger: log });
  consumer = await createAmqpBus({ url: vhost.url, service: "projects", logger: log });
  raw = await amqp.connect(vhost.url);
});

afterAll(async () => {
  await raw?.close().catch(() => undefined);
  await publisher?.close();
  await consumer?.close();
  await vhost?.dispose();
});

/** Everything waiting in a queue, read without a consumer (basic.get). */
async function drain(queue: string): Promise<GetMessage[]> {
  const channel = await raw.createChannel();
  try {
    const messages: GetMessage[] = [];
    for (;;) {
      const message = await channel.get(queue, { noAck: true });
      if (!message) return messages;
      messages.push(message);
    }
  } finally {
    await channel.close();
  }
}

async function waitForMessages(queue: string, count: number, timeoutMs = 10_000): Promise<GetMessage[]> {
  const found: GetMessage[] = [];
  await waitFor(
    async () => {
      found.push(...(await drain(queue)));
      return found.length >= count;
    },
    timeoutMs,
    `${count} message(s) in ${queue}`,
  );
  return found;
}

describe("events over the broker", () => {
  it("delivers an event to every consumer, with its ids", async () => {
    const seenA: { n: number; messageId: string; requestId: string; attempt: number }[] = [];
    const seenB: number[] = [];
    await consumer.subscribe("alpha", TestEvents.happened, async ({ n }, ctx) => {
      seenA.push({ n, messageId: ctx.messageId, requestId: ctx.requestId, attempt: ctx.attempt });
    });
    await consumer.subscribe("beta", TestEvents.happened, async ({ n }) => {
      seenB.push(n);
    });
    await publisher.publish(TestEvents.happened, { n: 1 }, { messageId: "m-1", requestId: "r-1" });
    await publisher.publish(TestEvents.happened, { n: 2 });
    await waitFor(() => seenA.length === 2 && seenB.length === 2, 5000, "both consumers");
    expect(seenA[0]).toEqual({ n: 1, messageId: "m-1", requestId: "r-1", attempt: 1 });
    expect(seenA[1]?.messageId).toMatch(/^[0-9a-f-]{36}$/);
    expect(seenB.sort()).toEqual([1, 2]);
  });

  it("refuses to publish an invalid payload", async () => {
    await expect(publisher.publish(TestEvents.happened, { n: "one" } as never)).rejects.toMatchObject({
      kind: "validation",
    });
  });

  it("retries a failing handler with a growing attempt count until it succeeds", async () => {
    const attempts: number[] = [];
    const markerAttempts: number[] = [];
    await consumer.subscribe(
      "flaky",
      TestEvents.happened,
      async ({ n }, ctx) => {
        if (n !== 100 && n !== 101) return;
        (n === 100 ? attempts : markerAttempts).push(ctx.attempt);
        if (ctx.attempt < 3) throw errors.unavailable("DB_UNAVAILABLE", "database down");
      },
      { maxAttempts: 4, retryDelayMs: 50, maxRetryDelayMs: 100 },
    );
    await publisher.publish(TestEvents.happened, { n: 100 });
    await waitFor(() => attempts.length === 3, 10_000, "three attempts");
    // A marker down the same path after it: once the marker's third attempt ran, any further attempt of
    // the first (queued earlier in the same FIFO queues) would have run too.
    await publisher.publish(TestEvents.happened, { n: 101 });
    await waitFor(() => markerAttempts.length === 3, 10_000, "the marker's three attempts");
    expect(attempts).toEqual([1, 2, 3]);
    expect(
      await drain(deadLetterQueueOf(subscriptionQueueOf("flaky", TestEvents.happened.name))),
    ).toHaveLength(0);
  });

  it("dead-letters a poison event after its retries, with the last error in headers", async () => {
    const attempts: number[] = [];
    const markerAttempts: number[] = [];
    await consumer.subscribe(
      "poisoned",
      TestEvents.happened,
      async ({ n }, ctx) => {
        if (n !== 666 && n !== 667) return;
        (n === 666 ? attempts : markerAttempts).push(ctx.attempt);
        throw new Error(`cannot handle ${n}`);
      },
      { maxAttempts: 3, retryDelayMs: 50, maxRetryDelayMs: 80 },
    );
    await publisher.publish(
      TestEvents.happened,
      { n: 666 },
      { messageId: "poison-1", requestId: "req-poison" },
    );
    const queue = subscriptionQueueOf("poisoned", TestEvents.happened.name);
    const [dead] = await waitForMessages(deadLetterQueueOf(queue), 1);
    expect(attempts).toEqual([1, 2, 3]);
    expect(dead?.properties.messageId).toBe("poison-1");
    expect(decodeBody(dead!.content, dead!.properties.contentType)).toEqual({ n: 666 });
    expect(dead?.properties.headers).toMatchObject({
      [Header.ATTEMPT]: 3,
      [Header.LAST_ERROR]: "Error: cannot handle 666",
      [Header.LAST_ERROR_KIND]: "internal",
      [Header.ORIGINAL_QUEUE]: queue,
      [Header.ORIGINAL_ROUTING_KEY]: TestEvents.happened.name,
      [Header.REQUEST_ID]: "req-poison",
    });
    expect(dead?.properties.headers?.["x-death"]).toBeUndefined();
    // A marker down the same path: once it is dead-lettered too, a further attempt of the first (queued
    // earlier in the same FIFO queues) would have run.
    await publisher.publish(TestEvents.happened, { n: 667 });
    const [marker] = await waitForMessages(deadLetterQueueOf(queue), 1);
    expect(decodeBody(marker!.content, marker!.properties.contentType)).toEqual({ n: 667 });
    expect(markerAttempts).toEqual([1, 2, 3]);
    expect(attempts).toEqual([1, 2, 3]);
  });

  it("dead-letters at once when the handler refuses the event (non-retryable kind)", async () => {
    const attempts: number[] = [];
    await consumer.subscribe(
      "refusing",
      TestEvents.happened,
      async ({ n }, ctx) => {
        if (n !== 404) return;
        attempts.push(ctx.attempt);
        throw errors.notFound("PROJECT_NOT_FOUND", "No such project.");
      },
      { maxAttempts: 5, retryDelayMs: 50 },
    );
    await publisher.publish(TestEvents.happened, { n: 404 });
    const [dead] = await waitForMessages(
      deadLetterQueueOf(subscriptionQueueOf("refusing", TestEvents.happened.name)),
      1,
    );
    expect(attempts).toEqual([1]);
    expect(dead?.properties.headers).toMatchObject({
      [Header.ATTEMPT]: 1,
      [Header.LAST_ERROR_KIND]: "not_found",
      [Header.LAST_ERROR_CODE]: "PROJECT_NOT_FOUND",
    });
  });

  it("dead-letters an invalid payload without calling the handler", async () => {
    let calls = 0;
    await consumer.subscribe("strict", TestEvents.happened, async () => {
      calls++;
    });
    const channel = await raw.createConfirmChannel();
    channel.publish("events", TestEvents.happened.name, Buffer.from('{"n":"not a number"}'), {
      contentType: "application/json",
      messageId: "bad-1",
    });
    channel.publish("events", TestEvents.happened.name, Buffer.from("{garbage"), {
      contentType: "application/json",
      messageId: "bad-2",
    });
    await channel.waitForConfirms();
    await channel.close();
    const dead = await waitForMessages(
      deadLetterQueueOf(subscriptionQueueOf("strict", TestEvents.happened.name)),
      2,
    );
    expect(dead.map((m) => m.properties.messageId).sort()).toEqual(["bad-1", "bad-2"]);
    expect(dead.every((m) => m.properties.headers?.[Header.LAST_ERROR_KIND] === "validation")).toBe(true);
    expect(calls).toBe(0);
  });

  it("re-declares and re-consumes a subscription queue deleted under it", async () => {
    const got: number[] = [];
    await consumer.subscribe("fragile", TestEvents.happened, async ({ n }) => {
      got.push(n);
    });
    const channel = await raw.createChannel();
    await channel.deleteQueue(subscriptionQueueOf("fragile", TestEvents.happened.name));
    await channel.close();
    // Published until the recovered queue is bound again; the first ones go nowhere.
    let n = 5000;
    await waitFor(
      async () => {
        await publisher.publish(TestEvents.happened, { n: n++ });
        return got.length > 0;
      },
      10_000,
      "the recovered subscription",
    );
    expect(consumer.isConnected()).toBe(true);
  });

  it("keeps an event for a durable subscription while its consumer is away", async () => {
    const got: number[] = [];
    const away = await createAmqpBus({ url: vhost.url, service: "notifications", logger: log });
    await away.subscribe("offline", TestEvents.happened, async ({ n }) => {
      got.push(n);
    });
    await away.close();
    await publisher.publish(TestEvents.happened, { n: 7 });
    const back = await createAmqpBus({ url: vhost.url, service: "notifications", logger: log });
    try {
      await back.subscribe("offline", TestEvents.happened, async ({ n }) => {
        got.push(n);
      });
      await waitFor(() => got.includes(7), 5000, "the event kept while away");
    } finally {
      await back.close();
    }
  });
});
