import { type AppError, defineStream, ErrorCode, isAppError } from "@fundraise/protocol";
import Type from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AmqpBus,
  callInstance,
  createAmqpBus,
  finishStream,
  type StreamSink,
  StreamWriter,
  serveStream,
} from "../src/index.ts";
import { createTestVhost, type TestVhost } from "../src/testing/index.ts";
import { testLogger } from "./helpers/index.ts";

// Streams (src/stream*.ts) on the real broker: two server instances, a writer on a third bus.
const TestStream = defineStream("users.test-stream", {
  open: Type.Object({ label: Type.String() }),
  finish: { request: Type.Object({ note: Type.String() }), response: Type.String(), timeoutMs: 5000 },
  partBytes: 16,
  partTimeoutMs: 5000,
});

/** A sink that records what it is given; `hold` keeps parts untaken until released. */
function recordingSink(label: string) {
  const state = {
    label,
    parts: [] as string[],
    aborted: undefined as AppError | undefined,
    hold: false,
    waiting: [] as (() => void)[],
    /** Takes the parts waiting now (later ones wait too while `hold`). */
    release() {
      for (const take of state.waiting.splice(0)) take();
    },
  };
  const sink: StreamSink<{ note: string }, string> = {
    part(entry, bytes) {
      state.parts.push(`${entry}:${Buffer.from(bytes).toString()}`);
      return state.hold ? new Promise((resolve) => state.waiting.push(resolve)) : Promise.resolve();
    },
    async finish({ note }) {
      return `${state.label} ${note}: ${state.parts.join(" ")}`;
    },
    abort(reason) {
      state.aborted = reason;
    },
  };
  return { state, sink };
}

let vhost: TestVhost;
let client: AmqpBus;
const servers: AmqpBus[] = [];
const sinks: ReturnType<typeof recordingSink>["state"][] = [];
let instances: Awaited<ReturnType<typeof serveStream>>[] = [];

beforeAll(async () => {
  vhost = await createTestVhost();
  const log = testLogger();
  client = await createAmqpBus({ url: vhost.url, service: "gateway", logger: log });
  for (let i = 0; i < 2; i++)
    servers.push(await createAmqpBus({ url: vhost.url, service: "users", logger: log }));
  instances = await Promise.all(
    servers.map((bus) =>
      serveStream(bus, TestStream, {
        idleMs: 300,
        open: ({ label }) => {
          const { state, sink } = recordingSink(label);
          sinks.push(state);
          return sink;
        },
      }),
    ),
  );
});
afterAll(async () => {
  await client?.close();
  for (const bus of servers) await bus.close();
  await vhost?.dispose();
});

const sinkOf = (label: string) => sinks.find((s) => s.label === label);

describe("a stream over the bus", () => {
  it("every part reaches the instance that opened it, in order; the finish answers from there", async () => {
    const writers = Array.from({ length: 6 }, (_, i) => ({
      label: `s${i}`,
      writer: new StreamWriter(client, TestStream, { open: { label: `s${i}` }, window: 3 }),
    }));
    for (const { writer, label } of writers) {
      for (let part = 0; part < 5; part++) writer.write("a", Buffer.from(`${label}-${part}`));
      writer.write("b", Buffer.from("end"));
    }
    const ends = await Promise.all(writers.map(({ writer }) => writer.end()));
    expect(new Set(ends.map((end) => end?.instance)).size).toBe(2);
    for (const [i, end] of ends.entries()) {
      const answer = await finishStream(client, TestStream, end!, { note: "done" });
      expect(answer).toBe(`s${i} done: ${[0, 1, 2, 3, 4].map((p) => `a:s${i}-${p}`).join(" ")} b:end`);
    }
    expect(instances.map((i) => i.open)).toEqual([0, 0]);
    // Six streams of six parts each, counted by the instance that received them.
    expect(instances.reduce((sum, i) => sum + i.partsReceived, 0)).toBe(36);
  });

  it("parts sent out of order are handed over in sequence", async () => {
    const ref = await client.call(TestStream.open, { label: "shuffled" });
    await Promise.all(
      [3, 1, 0, 2].map((seq) =>
        callInstance(client, TestStream.part, ref, {
          streamId: ref.streamId,
          seq,
          entry: "x",
          bytes: Buffer.from(String(seq)),
        }),
      ),
    );
    expect(sinkOf("shuffled")?.parts).toEqual(["x:0", "x:1", "x:2", "x:3"]);
    expect(await finishStream(client, TestStream, { ...ref, parts: 4 }, { note: "n" })).toBe(
      "shuffled n: x:0 x:1 x:2 x:3",
    );
  });

  it("the writer waits for the receiver: at most `window` parts unanswered", async () => {
    const writer = new StreamWriter(client, TestStream, { open: { label: "slow" }, window: 2 });
    writer.write("x", Buffer.from("warm"));
    await writer.end();
    const state = sinkOf("slow")!;
    state.hold = true;
    for (let i = 0; i < 5; i++) writer.write("x", Buffer.from(String(i)));
    expect(writer.ready()).toBeInstanceOf(Promise);
    await expect.poll(() => state.parts.length).toBe(3); // "warm", then the window's two
    state.release();
    await expect.poll(() => state.parts.length).toBe(5);
    state.hold = false;
    state.release();
    await expect.poll(() => state.parts.length).toBe(6);
    expect(await writer.end()).toMatchObject({ parts: 6 });
  });

  it("a stream nobody writes to is dropped after idleMs; a late part is STREAM_INTERRUPTED", async () => {
    const writer = new StreamWriter(client, TestStream, { open: { label: "idle" } });
    writer.write("x", Buffer.from("1"));
    const end = await writer.end();
    await expect
      .poll(() => sinkOf("idle")?.aborted?.code, { timeout: 5000 })
      .toBe(ErrorCode.STREAM_INTERRUPTED);
    const late = await callInstance(client, TestStream.part, end!, {
      streamId: end!.streamId,
      seq: 1,
      entry: "x",
      bytes: Buffer.from("2"),
    }).catch((e: unknown) => e);
    expect(isAppError(late) && late.code).toBe(ErrorCode.STREAM_INTERRUPTED);
  });

  it("an instance that dies while parts wait: the writer's probe fails the stream (STREAM_INTERRUPTED)", async () => {
    // A stream of a service only this instance serves: the writer's parts all go to it.
    const Lonely = defineStream("auth.test-stream", {
      open: Type.Object({}),
      finish: { request: Type.Object({}), response: Type.Null(), timeoutMs: 5000 },
      partBytes: 16,
      partTimeoutMs: 60_000,
    });
    const dying = await createAmqpBus({
      url: vhost.url,
      service: "auth",
      logger: testLogger(),
      closeTimeoutMs: 100,
    });
    let taken = 0;
    await serveStream(dying, Lonely, {
      idleMs: 60_000,
      // Parts are never taken: their answers would only come with their deadline.
      open: () => ({
        part: () => new Promise(() => taken++),
        finish: async () => null,
        abort: () => undefined,
      }),
    });
    const writer = new StreamWriter(client, Lonely, { open: {}, window: 2, probeMs: 100 });
    writer.write("x", Buffer.from("1"));
    writer.write("x", Buffer.from("2"));
    await expect.poll(() => taken).toBe(2);
    await dying.close();
    await expect(writer.end()).rejects.toMatchObject({ code: ErrorCode.STREAM_INTERRUPTED });
  });

  it("a service that is not running: the writer fails with 503 once, and tries no more", async () => {
    const Nobody = defineStream("chain.test-stream", {
      open: Type.Object({}),
      finish: { request: Type.Object({}), response: Type.Null(), timeoutMs: 5000 },
      partBytes: 16,
      partTimeoutMs: 5000,
    });
    let calls = 0;
    const counting = {
      ...client,
      call: ((...args: Parameters<AmqpBus["call"]>) => {
        calls++;
        return client.call(...args);
      }) as AmqpBus["call"],
    };
    const writer = new StreamWriter(counting, Nobody, { open: {} });
    writer.write("x", Buffer.from("1"));
    await expect(writer.end()).rejects.toMatchObject({ code: ErrorCode.SERVICE_UNAVAILABLE });
    writer.write("x", Buffer.from("2"));
    await expect(writer.ready()).rejects.toMatchObject({ code: ErrorCode.SERVICE_UNAVAILABLE });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(calls).toBe(1);
  });

  it("an instance that stops takes its streams with it: the next call is STREAM_INTERRUPTED at once", async () => {
    const extra = await createAmqpBus({ url: vhost.url, service: "users", logger: testLogger() });
    const server = await serveStream(extra, TestStream, {
      idleMs: 60_000,
      open: () => recordingSink("extra").sink,
    });
    const ref = { streamId: "0".repeat(32), instance: server.instance };
    await extra.close();
    const error = await callInstance(client, TestStream.part, ref, {
      streamId: ref.streamId,
      seq: 0,
      entry: "x",
      bytes: Buffer.from("x"),
    }).catch((e: unknown) => e);
    expect(isAppError(error) && error.code).toBe(ErrorCode.STREAM_INTERRUPTED);
  });
});
