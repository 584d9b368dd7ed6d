import { randomUUID } from "node:crypto";
import {
  type AmqpBus,
  createAmqpBus,
  Exchanges,
  SUBSCRIPTIONS_STREAM,
  type SubscriptionRecord,
  uuidv7,
} from "@fundraise/bus";
import { createTestVhost, type TestVhost, waitFor } from "@fundraise/bus/testing";
import { defineEvent, defineRpc, errors, personal } from "@fundraise/protocol";
import amqp, { type ChannelModel } from "amqplib";
import pino from "pino";
import Type from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  entriesOf,
  JOURNAL_EXCHANGE,
  JOURNAL_QUEUE,
  type JournalEntry,
  JournalHeader,
  journalWriter,
  LATE_QUEUE,
  streamBounds,
} from "../src/index.ts";

// The writer as the bus uses it, on the local RabbitMQ: what each entry records, how entries of one
// request link into a story, what is replaced before it is kept, and what goes to the late stream.

const Rpc = {
  greet: defineRpc("users.test.greet", {
    request: Type.Object({ mail: personal("email", Type.String()), note: Type.String() }),
    response: Type.Object({ mail: personal("email", Type.String()), text: Type.String() }),
  }),
  inner: defineRpc("users.test.inner", {
    request: Type.Object({ n: Type.Integer() }),
    response: Type.Integer(),
  }),
  refuse: defineRpc("users.test.refuse", { request: Type.Object({}), response: Type.Null() }),
} as const;
const Events = {
  greeted: defineEvent("users.test.greeted", Type.Object({ n: Type.Integer() })),
} as const;

let vhost: TestVhost;
let connection: ChannelModel;
let caller: AmqpBus;
let server: AmqpBus;
const warnings: string[] = [];
const flaky = new Map<string, number>();

beforeAll(async () => {
  vhost = await createTestVhost("journal_writer");
  connection = await amqp.connect(vhost.url);
  // A journal made by an older process: another retention, and the events bound into it.
  const setup = await connection.createChannel();
  await setup.assertExchange(Exchanges.EVENTS, "topic", { durable: true });
  await setup.assertExchange(JOURNAL_EXCHANGE, "fanout", { durable: true });
  await setup.assertQueue(JOURNAL_QUEUE, {
    durable: true,
    arguments: { "x-queue-type": "stream", "x-max-age": "1D" },
  });
  await setup.bindQueue(JOURNAL_QUEUE, JOURNAL_EXCHANGE, "");
  await setup.bindExchange(JOURNAL_EXCHANGE, Exchanges.EVENTS, "#");
  await setup.close();

  const logger = pino({ level: "warn" }, { write: (line: string) => void warnings.push(line) });
  const journal = journalWriter({ lateAfterMs: 1000, pseudonymKey: "writer-test-key-0123" });
  caller = await createAmqpBus({ url: vhost.url, service: "gateway", logger, journal });
  server = await createAmqpBus({ url: vhost.url, service: "users", logger, journal });
  await server.serve(Rpc.inner, async ({ n }) => n + 1);
  await server.serve(Rpc.greet, async ({ mail, note }, ctx) => {
    const n = await server.call(Rpc.inner, { n: 1 }, ctx);
    await server.publish(Events.greeted, { n }, { requestId: ctx.requestId, causedBy: ctx.causedBy });
    return { mail, text: `hello ${note}` };
  });
  await server.serve(Rpc.refuse, async () => {
    throw errors.conflict("MAIL_TAKEN", "ada@example.org is already taken.");
  });
  await server.subscribe(
    "flaky",
    Events.greeted,
    async (_event, ctx) => {
      const seen = (flaky.get(ctx.messageId) ?? 0) + 1;
      flaky.set(ctx.messageId, seen);
      if (seen === 1) throw new Error("first attempt fails");
    },
    { retryDelayMs: 50 },
  );
  await server.subscribe("again", Events.greeted, async (_event, ctx) => ctx.markDuplicate?.());
});

afterAll(async () => {
  await caller?.close();
  await server?.close();
  await connection?.close().catch(() => undefined);
  await vhost?.dispose();
});

/** Every entry of a stream, and the raw messages, as of now. */
async function readStream(queue: string): Promise<{ entries: JournalEntry[]; raw: string[] }> {
  const { last } = await streamBounds(connection, queue);
  if (last === undefined) return { entries: [], raw: [] };
  const channel = await connection.createChannel();
  await channel.prefetch(1000);
  const entries: JournalEntry[] = [];
  const raw: string[] = [];
  await new Promise<void>((resolve) => {
    void channel.consume(
      queue,
      (message) => {
        if (!message) return;
        raw.push(message.content.toString("latin1"), JSON.stringify(message.properties.headers));
        entries.push(...entriesOf(message));
        channel.ack(message);
        if ((message.properties.headers?.["x-stream-offset"] as number) >= last) resolve();
      },
      { arguments: { "x-stream-offset": "first" } },
    );
  });
  await channel.close();
  return { entries, raw };
}

const ofRequest = (entries: JournalEntry[], requestId: string) =>
  entries.filter((entry) => entry.requestId === requestId);

describe("the journal writer", () => {
  it("records a call, the call it makes, its event and each consumer's handling, linked by causes", async () => {
    const requestId = uuidv7();
    caller.note({
      kind: "http",
      id: `http:${requestId}`,
      name: "PUT /test/greet",
      at: Date.now(),
      requestId,
      summary: { method: "PUT", route: "/test/greet", status: 200, durationMs: 3 },
    });
    await caller.call(Rpc.greet, { mail: "Ada@Example.org", note: "there" }, { requestId });
    let entries: JournalEntry[] = [];
    await waitFor(
      async () => {
        entries = ofRequest((await readStream(JOURNAL_QUEUE)).entries, requestId);
        return entries.filter((e) => e.kind === "delivery").length >= 3;
      },
      20_000,
      "the request's entries",
    );
    const [outer] = entries.filter((e) => e.kind === "rpc-request" && e.name === Rpc.greet.name);
    const [inner] = entries.filter((e) => e.kind === "rpc-request" && e.name === Rpc.inner.name);
    const [event] = entries.filter((e) => e.kind === "event");
    expect(entries.find((e) => e.kind === "http")).toMatchObject({
      service: "gateway",
      summary: { status: 200 },
    });
    expect(outer).toMatchObject({ service: "gateway", requestId });
    expect(outer?.causedBy).toBeUndefined();
    expect(inner).toMatchObject({ service: "users", causedBy: outer?.id });
    expect(event).toMatchObject({ name: Events.greeted.name, causedBy: outer?.id, messageId: event?.id });
    const replies = entries.filter((e) => e.kind === "rpc-reply");
    expect(replies.map((r) => r.correlationId).sort()).toEqual(
      [outer?.correlationId, inner?.correlationId].sort(),
    );
    expect(replies.find((r) => r.correlationId === outer?.correlationId)?.causedBy).toBe(outer?.id);
    const deliveries = entries
      .filter((e) => e.kind === "delivery")
      .map((e) => ({ id: e.id, ...(e.summary as Record<string, unknown>) }));
    expect(deliveries).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          id: `${event?.id}@flaky#1`,
          consumer: "flaky",
          attempt: 1,
          outcome: "retried",
          retryInMs: 50,
          error: expect.objectContaining({ message: "Error: first attempt fails" }),
        }),
        expect.objectContaining({ id: `${event?.id}@flaky#2`, attempt: 2, outcome: "acked" }),
        expect.objectContaining({ id: `${event?.id}@again#1`, outcome: "duplicate" }),
      ]),
    );
    for (const entry of entries) expect(Number.isInteger(entry.at) && entry.at > 1e12).toBe(true);
  });

  it("keeps no e-mail address: the schema's personal fields become pseudonyms, error texts are scrubbed", async () => {
    const requestId = uuidv7();
    await caller.call(Rpc.greet, { mail: "grace.hopper@example.org", note: "n" }, { requestId });
    await expect(caller.call(Rpc.refuse, {}, { requestId })).rejects.toMatchObject({ code: "MAIL_TAKEN" });
    let read = { entries: [] as JournalEntry[], raw: [] as string[] };
    await waitFor(
      async () => {
        read = await readStream(JOURNAL_QUEUE);
        return ofRequest(read.entries, requestId).filter((e) => e.kind === "rpc-reply").length >= 2;
      },
      20_000,
      "the replies",
    );
    expect(read.raw.join("\n")).not.toMatch(/grace\.hopper|ada@example/i);
    const request = ofRequest(read.entries, requestId).find(
      (e) => e.kind === "rpc-request" && e.name === Rpc.greet.name,
    );
    const body = JSON.parse(Buffer.from(request?.body ?? []).toString());
    expect(body.mail).toMatch(/^\[email:[\w-]{16}\]$/);
    expect(request?.redacted).toEqual(["/mail"]);
    const reply = ofRequest(read.entries, requestId).find(
      (e) => e.kind === "rpc-reply" && e.correlationId === request?.correlationId,
    );
    // The same person reads the same in every entry.
    expect(JSON.parse(Buffer.from(reply?.body ?? []).toString()).data.mail).toBe(body.mail);
    const refused = ofRequest(read.entries, requestId).find(
      (e) => e.kind === "rpc-reply" && e.name === Rpc.refuse.name,
    );
    expect(Buffer.from(refused?.body ?? []).toString()).toMatch(/"\[email:[\w-]{16}\] is already taken\."/);
  });

  it("sends each batch with the ids it holds and its time span, and entries long after their request to the late stream", async () => {
    const old = uuidv7(Date.now() - 60_000);
    await caller.call(Rpc.inner, { n: 5 }, { requestId: old });
    let late: JournalEntry[] = [];
    await waitFor(
      async () => {
        late = ofRequest((await readStream(LATE_QUEUE)).entries, old);
        return late.length >= 2;
      },
      20_000,
      "the late entries",
    );
    expect(late.map((e) => e.kind).sort()).toEqual(["rpc-reply", "rpc-request"]);
    const channel = await connection.createChannel();
    await channel.prefetch(100);
    const headers = await new Promise<Record<string, unknown>>((resolve) => {
      void channel.consume(
        LATE_QUEUE,
        (message) => {
          if (!message) return;
          channel.ack(message);
          if (entriesOf(message).some((e) => e.requestId === old)) resolve(message.properties.headers ?? {});
        },
        { arguments: { "x-stream-offset": "first" } },
      );
    });
    await channel.close();
    expect(headers[JournalHeader.IDS]).toContain(` ${old} `);
    expect(headers[JournalHeader.FIRST_AT]).toBeLessThanOrEqual(headers[JournalHeader.LAST_AT] as number);
    // A fresh request's entries stay in the main stream only.
    const fresh = uuidv7();
    await caller.call(Rpc.inner, { n: 6 }, { requestId: fresh });
    await waitFor(
      async () => ofRequest((await readStream(JOURNAL_QUEUE)).entries, fresh).length >= 2,
      20_000,
    );
    expect(ofRequest((await readStream(LATE_QUEUE)).entries, fresh)).toEqual([]);
  });

  it("removes the old events binding: an event is journaled once, by its publisher, in format 2", async () => {
    const messageId = randomUUID();
    await caller.publish(Events.greeted, { n: 7 }, { messageId });
    await waitFor(
      async () => (await readStream(JOURNAL_QUEUE)).entries.some((e) => e.id === messageId),
      20_000,
    );
    const copies = (await readStream(JOURNAL_QUEUE)).entries.filter((e) => e.id === messageId);
    expect(copies).toHaveLength(1);
    expect(copies[0]).toMatchObject({ kind: "event", service: "gateway" });
  });

  it("keeps a stream's retention and says how to change it", () => {
    expect(warnings.join("\n")).toMatch(/rabbitmqctl set_policy bus\.journal-retention/);
  });

  it("announces every subscription for the dead-letter tools", async () => {
    const channel = await connection.createChannel();
    await channel.prefetch(100);
    const records: SubscriptionRecord[] = [];
    void channel.consume(
      SUBSCRIPTIONS_STREAM,
      (message) => {
        if (!message) return;
        channel.ack(message);
        records.push(JSON.parse(message.content.toString()));
      },
      { arguments: { "x-stream-offset": "first" } },
    );
    await waitFor(() => records.some((r) => r.consumer === "flaky"), 10_000, "the announcement");
    await channel.close();
    expect(records.find((r) => r.consumer === "flaky")).toMatchObject({
      event: Events.greeted.name,
      queue: "flaky.users.test.greeted",
      deadLetterQueue: "flaky.users.test.greeted.dlq",
      service: "users",
    });
  });
});
