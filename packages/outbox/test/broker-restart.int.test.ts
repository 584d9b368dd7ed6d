import { type AmqpBus, createAmqpBus } from "@fundraise/bus";
import { type BrokerNode, startBrokerNode, waitFor } from "@fundraise/bus/testing";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutboxRelay, enqueue, outboxDdl } from "../src/index.ts";
import { createTestDatabase, type TestDatabase, TestEvents, testLogger, transaction } from "./helpers.ts";

// The broker really stops and starts (`rabbitmqctl stop_app` / `start_app`): a RabbitMQ node of this
// file's own, so the shared local broker that other files use in parallel is never touched. (The bus's own
// calls and subscriptions across a restart: packages/bus/test/broker-restart.int.test.ts.)
let node: BrokerNode;
let db: TestDatabase;
let client: AmqpBus;
let server: AmqpBus;
const log = testLogger();
/** Deliveries of TestEvents.happened to the subscriber, in arrival order. */
const deliveries: { n: number; messageId: string }[] = [];

beforeAll(async () => {
  [node, db] = await Promise.all([startBrokerNode(), createTestDatabase()]);
  const options = { url: node.url, logger: log, maxReconnectDelayMs: 300 };
  [client, server] = await Promise.all([
    // A publish waits this long for a broker that is away (long enough for a restart).
    createAmqpBus({ ...options, service: "gateway", publishTimeoutMs: 20_000 }),
    createAmqpBus({ ...options, service: "users" }),
  ]);
  await server.subscribe("counter", TestEvents.happened, async ({ n }, ctx) => {
    deliveries.push({ n, messageId: ctx.messageId });
  });
  await db.pool.query("CREATE SCHEMA projects");
  await db.pool.query(outboxDdl("projects"));
}, 120_000);

afterAll(async () => {
  await client?.close();
  await server?.close();
  await node?.dispose();
  await db?.dispose();
});

const ns = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);
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
  it("publishes outbox rows enqueued while it is down once it is back: all, once each, in order", async () => {
    const attempts: string[] = [];
    // The relay says which row waits for the broker (its waiting line names the row): the evidence that it
    // tried while the broker was down.
    const relayLog = pino(
      { level: "warn" },
      {
        write(line: string) {
          const record = JSON.parse(line) as { messageId?: string };
          if (record.messageId) attempts.push(record.messageId);
        },
      },
    );
    const relayBus = await createAmqpBus({
      url: node.url,
      service: "projects",
      logger: log,
      maxReconnectDelayMs: 300,
      publishTimeoutMs: 500,
    });
    const relay = createOutboxRelay({
      pool: db.pool,
      bus: relayBus,
      schema: "projects",
      logger: relayLog,
      intervalMs: 200,
    });
    try {
      await node.stop();
      await waitFor(
        () => !relayBus.isConnected() && !server.isConnected(),
        5000,
        "the buses to see the loss",
      );
      const ids = await transaction(db.pool, async (tx) => {
        const written: string[] = [];
        for (const n of ns(100, 10)) {
          written.push(await enqueue(tx, TestEvents.happened, { n }, { schema: "projects" }));
        }
        return written;
      });
      await waitFor(() => attempts.includes(ids[0] as string), 10_000, "the relay to try the first row");
      expect(await pending()).toBe(10);

      await node.start();
      await waitFor(async () => (await pending()) === 0, 15_000, "the relay to publish every row");
      await waitFor(() => ns(100, 10).every((n) => delivered(n) > 0), 10_000, "every row's event");
      await drained(110);
      const rows = deliveries.filter((d) => d.n >= 100 && d.n < 110);
      expect(rows.map((d) => d.n)).toEqual(ns(100, 10));
      expect(rows.map((d) => d.messageId)).toEqual(ids);
    } finally {
      await relay.stop();
      await relayBus.close();
    }
    // A real stop and start of a RabbitMQ node: 28 s here beside other test files, more on a busy machine.
  }, 150_000);
});

async function pending(): Promise<number> {
  const { rows } = await db.pool.query(
    "SELECT count(*)::int AS n FROM projects.outbox WHERE published_at IS NULL",
  );
  return (rows[0] as { n: number }).n;
}
