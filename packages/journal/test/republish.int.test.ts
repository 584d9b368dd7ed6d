import { randomUUID } from "node:crypto";
import { type AmqpBus, createAmqpBus, Header, subscriptionQueueOf, uuidv7 } from "@fundraise/bus";
import { createTestVhost, type TestVhost, waitFor } from "@fundraise/bus/testing";
import { defineEvent, UsersRpc } from "@fundraise/protocol";
import amqp from "amqplib";
import Type from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../src/cli/replay.ts";
import {
  encodeBatch,
  JOURNAL_EXCHANGE,
  type JournalEntry,
  type JournalRecord,
  journalWriter,
  type ReplayOptions,
  replayJournal,
} from "../src/index.ts";
import { PERSONAL_REASON, REPLAYED_FROM } from "../src/republish.ts";
import { TestEvents, TestRpc, testLogger } from "./helpers.ts";

// Re-publishing from the journal on the local RabbitMQ: what is sent by default, what needs which option,
// what is refused, and what the broker returns.

const Unbound = defineEvent("users.test.unbound", Type.Object({ n: Type.Integer() }));

let vhost: TestVhost;
let client: AmqpBus;
let server: AmqpBus;
const audited = new Map<string, number>();
let counted = 0;

beforeAll(async () => {
  vhost = await createTestVhost("journal_republish");
  const log = testLogger();
  const journal = journalWriter();
  client = await createAmqpBus({ url: vhost.url, service: "gateway", logger: log, journal });
  server = await createAmqpBus({ url: vhost.url, service: "users", logger: log, journal });
  await server.serve(UsersRpc.count, async () => ++counted);
  await server.serve(TestRpc.echo, async ({ text }, ctx) => ({ text, requestId: ctx.requestId }));
  await server.subscribe("audit", TestEvents.happened, async (_payload, ctx) => {
    audited.set(ctx.messageId, (audited.get(ctx.messageId) ?? 0) + 1);
  });
});

afterAll(async () => {
  await client?.close();
  await server?.close();
  await vhost?.dispose();
});

async function republish(options: Partial<ReplayOptions>) {
  const records: JournalRecord[] = [];
  const summary = await replayJournal({
    url: vhost.url,
    republish: true,
    ...options,
    onRecord: (r) => records.push(r),
  });
  return { summary, records };
}

/** The entries of one request, once they are all in the journal. */
async function entriesOf(requestId: string, n: number): Promise<JournalRecord[]> {
  let records: JournalRecord[] = [];
  await waitFor(
    async () => {
      records = [];
      await replayJournal({ url: vhost.url, onRecord: (r) => r.requestId === requestId && records.push(r) });
      return records.length >= n;
    },
    10_000,
    `${n} entries of ${requestId}`,
  );
  return records;
}

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string[] }> {
  let out = "";
  let err = "";
  const code = await main(["--url", vhost.url, ...argv], { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err: err.split("\n").filter((line) => line !== "") };
}

const positionOf = (record: JournalRecord) => {
  const [offset, index] = record.position.split(":").map(Number);
  return { offset: offset!, index: index! };
};

describe("re-publishing", () => {
  it("sends events by default; RPC requests only when asked; replies and deliveries never", async () => {
    const requestId = uuidv7();
    const messageId = randomUUID();
    await client.call(TestRpc.echo, { text: "hi" }, { requestId });
    await client.publish(TestEvents.happened, { n: 1 }, { requestId, messageId });
    await waitFor(() => audited.get(messageId) === 1, 5000, "first delivery");
    const mine = await entriesOf(requestId, 4); // request, reply, event, delivery
    const from = positionOf(mine[0]!);
    const { summary, records } = await republish({ from, key: "users.test.#" });
    const ours = records.filter((r) => r.requestId === requestId);
    expect(ours.map((r) => [r.kind, r.action])).toEqual(
      expect.arrayContaining([
        ["rpc-request", "skipped"],
        ["rpc-reply", "skipped"],
        ["event", "republished"],
        ["delivery", "skipped"],
      ]),
    );
    expect(summary).toMatchObject({ republished: 1, unroutable: 0 });
    await waitFor(() => audited.get(messageId) === 2, 5000, "the replayed delivery");

    // The replay is journaled, marked with where it came from, and not replayed again by default.
    const event = ours.find((r) => r.kind === "event")!;
    const copies = await entriesOf(requestId, 6);
    const replay = copies.find((r) => r.service === "replay");
    expect(replay?.headers?.[REPLAYED_FROM]).toBe(event.position);
    expect(replay?.headers?.[Header.REPLAYED_FROM_OFFSET]).toBe(positionOf(event).offset);
    const again = await republish({ from, key: TestEvents.happened.name, kind: "event", dryRun: true });
    expect(again.records.find((r) => r.service === "replay")).toMatchObject({
      action: "skipped",
      reason: expect.stringContaining("already a replay"),
    });
  });

  it("re-executes read RPCs with --include-rpc and refuses writes without --allow-writes", async () => {
    const requestId = uuidv7();
    await client.call(UsersRpc.count, {}, { requestId });
    await client.call(TestRpc.echo, { text: "write?" }, { requestId });
    const mine = await entriesOf(requestId, 4);
    const before = counted;
    const { summary, records } = await republish({
      from: positionOf(mine[0]!),
      kind: "rpc-request",
      includeRpc: true,
    });
    const ours = records.filter((r) => r.requestId === requestId);
    expect(ours.find((r) => r.name === UsersRpc.count.name)).toMatchObject({
      action: "republished",
      target: { exchange: "rpc", routingKey: "users.user.count" },
    });
    expect(ours.find((r) => r.name === TestRpc.echo.name)).toMatchObject({
      action: "refused",
      reason: expect.stringContaining("--allow-writes"),
    });
    expect(summary.refused).toBeGreaterThanOrEqual(1);
    await waitFor(() => counted === before + 1, 5000, "the count executed again");
  });

  it("counts what the broker returns as unroutable; a queue given is not", async () => {
    const requestId = uuidv7();
    await client.publish(Unbound, { n: 1 }, { requestId });
    const [entry] = await entriesOf(requestId, 1);
    const { summary, records } = await republish({ from: positionOf(entry!), limit: 1 });
    expect(records[0]).toMatchObject({ action: "unroutable", reason: expect.stringContaining("no queue") });
    expect(summary).toMatchObject({ matched: 1, republished: 0, unroutable: 1 });
    const queue = subscriptionQueueOf("audit", TestEvents.happened.name);
    const toQueue = await republish({ from: positionOf(entry!), limit: 1, toQueue: queue });
    expect(toQueue.summary).toMatchObject({ republished: 1, unroutable: 0 });
    expect(toQueue.records[0]?.target).toEqual({ queue });
  });

  it("skips entries whose personal data was replaced", async () => {
    const requestId = uuidv7();
    const redacted: JournalEntry = {
      id: randomUUID(),
      kind: "event",
      name: TestEvents.happened.name,
      at: Date.now(),
      service: "users",
      requestId,
      properties: { messageId: randomUUID(), contentType: "application/json", headers: {} },
      body: Buffer.from('{"n":1,"email":"[email:abc]"}'),
      redacted: ["/email"],
    };
    const connection = await amqp.connect(vhost.url);
    try {
      const channel = await connection.createConfirmChannel();
      const batch = encodeBatch([redacted], "users");
      channel.publish(JOURNAL_EXCHANGE, "", batch.body, batch.properties);
      await channel.waitForConfirms();
    } finally {
      await connection.close();
    }
    const [entry] = await entriesOf(requestId, 1);
    const { records } = await republish({ from: positionOf(entry!), limit: 1 });
    expect(records[0]).toMatchObject({ action: "skipped", reason: PERSONAL_REASON });
  });

  it("prints the target of each match with --dry-run, and checks --to-queue before reading", async () => {
    const requestId = uuidv7();
    await client.publish(TestEvents.happened, { n: 5 }, { requestId });
    // The audit subscriber's delivery is journaled too, by another writer: it may land first.
    const entry = (await entriesOf(requestId, 2)).find((r) => r.kind === "event");
    const dry = await cli("--from", entry!.position, "--limit", "1", "--republish", "--dry-run");
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.out)).toMatchObject({
      position: entry!.position,
      action: "would-republish",
      target: { exchange: "events", routingKey: TestEvents.happened.name },
    });
    expect(JSON.parse(dry.err.at(-1)!)).toMatchObject({
      summary: { matched: 1, republished: 0, unroutable: 0 },
    });
    const queue = subscriptionQueueOf("audit", TestEvents.happened.name);
    const toQueue = await cli(
      "--from",
      entry!.position,
      "--limit",
      "1",
      "--republish",
      "--dry-run",
      "--to-queue",
      queue,
    );
    expect(JSON.parse(toQueue.out)).toMatchObject({ action: "would-republish", target: { queue } });
    const missing = await cli("--from", entry!.position, "--republish", "--to-queue", "no-such-queue");
    expect(missing.code).toBe(2);
    expect(missing.err[0]).toBe("--to-queue: no queue no-such-queue");
  });
});
