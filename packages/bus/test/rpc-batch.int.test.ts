import { randomUUID } from "node:crypto";
import { defineRpc, errors } from "@fundraise/protocol";
import amqp from "amqplib";
import Type from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AmqpBus, createAmqpBus, Exchanges } from "../src/index.ts";
import { packBatch, RpcBatch } from "../src/rpc-batch.ts";
import { createTestVhost, type TestVhost, waitFor } from "../src/testing/index.ts";
import { sleep, testLogger } from "./helpers/index.ts";

// Calls of one RPC made in the same turn of the caller's event loop travel as one message, and replies
// finished in one turn for one caller travel back as one (src/rpc-batch.ts). The server here takes one
// delivery at a time (prefetch 1), so how many handlers run at once tells how the calls were delivered.

const Work = defineRpc("projects.test.work", {
  request: Type.Object({ id: Type.String(), ms: Type.Integer(), fail: Type.Optional(Type.Boolean()) }),
  response: Type.Object({ id: Type.String(), requestId: Type.String(), traceparent: Type.String() }),
});
const Alone = defineRpc("projects.test.alone", {
  request: Type.Object({ ms: Type.Integer() }),
  response: Type.Null(),
  batched: false,
});
/** Another service's RPC served by the same process: a queue, consumer and channel of its own. */
const Echo = defineRpc("storage.test.echo", {
  request: Type.Object({ id: Type.String(), ms: Type.Integer() }),
  response: Type.String(),
});
const Nobody = defineRpc("chain.test.nobody", { request: Type.Object({}), response: Type.Null() });

let vhost: TestVhost;
let client: AmqpBus;
let other: AmqpBus;
let server: AmqpBus;
const log = testLogger();
let running = 0;
let mostAtOnce = 0;
const started = new Set<string>();

async function busy<T>(ms: number, value: T): Promise<T> {
  running += 1;
  mostAtOnce = Math.max(mostAtOnce, running);
  await sleep(ms);
  running -= 1;
  return value;
}

beforeAll(async () => {
  vhost = await createTestVhost();
  client = await createAmqpBus({ url: vhost.url, service: "gateway", logger: log });
  other = await createAmqpBus({ url: vhost.url, service: "auth", logger: log });
  server = await createAmqpBus({ url: vhost.url, service: "projects", logger: log, prefetch: 1 });
  await server.serve(Work, async ({ id, ms, fail }, ctx) => {
    started.add(id);
    await busy(ms, null);
    if (fail) throw errors.notFound("PROJECT_NOT_FOUND", `No project ${id}.`);
    return { id, requestId: ctx.requestId, traceparent: ctx.traceparent ?? "" };
  });
  await server.serve(Alone, ({ ms }) => busy(ms, null));
  await server.serve(Echo, ({ id, ms }) => busy(ms, id));
});

afterAll(async () => {
  await client?.close();
  await other?.close();
  await server?.close();
  await vhost?.dispose();
});

function reset(): void {
  mostAtOnce = 0;
}

const traceOf = (i: number) => `00-${String(i).padStart(32, "0")}-${"1".repeat(16)}-01`;

describe("batched RPC over the broker", () => {
  it("calls made in one turn share one delivery, and each gets its own answer and context", async () => {
    reset();
    const calls = Array.from({ length: 8 }, (_, i) =>
      client.call(Work, { id: `w${i}`, ms: 100 }, { requestId: `r${i}`, traceparent: traceOf(i) }),
    );
    const answers = await Promise.all(calls);
    // One delivery at a time, yet all eight ran together: they came in one message.
    expect(mostAtOnce).toBe(8);
    expect(answers).toEqual(
      Array.from({ length: 8 }, (_, i) => ({ id: `w${i}`, requestId: `r${i}`, traceparent: traceOf(i) })),
    );
  });

  it("calls made in different turns are delivered one by one", async () => {
    reset();
    const calls: Array<Promise<unknown>> = [];
    for (let i = 0; i < 3; i++) {
      calls.push(client.call(Work, { id: `t${i}`, ms: 50 }));
      await sleep(5);
    }
    await Promise.all(calls);
    expect(mostAtOnce).toBe(1);
  });

  it("never batches a call marked batched: false", async () => {
    reset();
    await Promise.all(Array.from({ length: 4 }, () => client.call(Alone, { ms: 30 })));
    expect(mostAtOnce).toBe(1);
  });

  it("answers successes and errors of one batch side by side", async () => {
    const outcomes = await Promise.allSettled([
      client.call(Work, { id: "ok-1", ms: 0 }),
      client.call(Work, { id: "bad", ms: 0, fail: true }),
      client.call(Work, { id: "ok-2", ms: 20 }),
    ]);
    expect(outcomes[0]).toMatchObject({ status: "fulfilled", value: { id: "ok-1" } });
    expect(outcomes[1]).toMatchObject({
      status: "rejected",
      reason: { kind: "not_found", code: "PROJECT_NOT_FOUND" },
    });
    expect((outcomes[1] as PromiseRejectedResult).reason.message).toBe("No project bad.");
    expect(outcomes[2]).toMatchObject({ status: "fulfilled", value: { id: "ok-2" } });
  });

  it("drops a call of a batch whose deadline passed in the queue, and answers the others", async () => {
    const occupied = client.call(Work, { id: "occupy", ms: 600 }, { timeoutMs: 5000 });
    await waitFor(() => started.has("occupy"), 5000, "the first call to occupy the server");
    // Both wait behind it in one message; one of them gives up before it is taken.
    const late = client.call(Work, { id: "late", ms: 0 }, { timeoutMs: 200 });
    const patient = client.call(Work, { id: "patient", ms: 0 }, { timeoutMs: 5000 });
    await expect(late).rejects.toMatchObject({ kind: "timeout", code: "RPC_TIMEOUT" });
    await expect(patient).resolves.toMatchObject({ id: "patient" });
    await occupied;
    expect(started.has("patient")).toBe(true);
    expect(started.has("late")).toBe(false);
  });

  it("fails every call of a batch nobody serves at once, as unavailable", async () => {
    const began = Date.now();
    const outcomes = await Promise.allSettled(
      Array.from({ length: 5 }, () => client.call(Nobody, {}, { timeoutMs: 20_000 })),
    );
    // At once, not after the calls' 20 s: half of it tells them apart on a slow machine too.
    expect(Date.now() - began).toBeLessThan(10_000);
    for (const outcome of outcomes) {
      expect(outcome).toMatchObject({
        status: "rejected",
        reason: { kind: "unavailable", code: "SERVICE_UNAVAILABLE" },
      });
    }
  });

  it("sends each caller its own replies when two callers' calls are answered together", async () => {
    const mine = Array.from({ length: 10 }, (_, i) => client.call(Work, { id: `mine-${i}`, ms: 40 }));
    const theirs = Array.from({ length: 10 }, (_, i) => other.call(Work, { id: `theirs-${i}`, ms: 40 }));
    expect((await Promise.all(mine)).map((a) => a.id)).toEqual(mine.map((_, i) => `mine-${i}`));
    expect((await Promise.all(theirs)).map((a) => a.id)).toEqual(theirs.map((_, i) => `theirs-${i}`));
  });

  it("answers one caller's calls to two services of one process finished in one turn, and acknowledges both", async () => {
    // Both handlers end on the same timer turn; each reply goes out on its own request's channel. Each
    // service's consumer takes one delivery at a time: a lost acknowledgement would stall the next round.
    for (let round = 0; round < 3; round++) {
      const [work, echo] = await Promise.all([
        client.call(Work, { id: `w${round}`, ms: 30 }),
        client.call(Echo, { id: `e${round}`, ms: 30 }),
      ]);
      expect(work.id).toBe(`w${round}`);
      expect(echo).toBe(`e${round}`);
    }
  });

  it("drops a batch it cannot read and goes on serving", async () => {
    const connection = await amqp.connect(vhost.url);
    try {
      const channel = await connection.createChannel();
      const garbage = packBatch(RpcBatch.REQUESTS, "test", []);
      channel.publish(Exchanges.RPC, Work.name, Buffer.from("not a batch"), {
        ...garbage.properties,
        messageId: randomUUID(),
      });
      await channel.close();
    } finally {
      await connection.close();
    }
    await expect(client.call(Work, { id: "after-garbage", ms: 0 })).resolves.toMatchObject({
      id: "after-garbage",
    });
  });
});
