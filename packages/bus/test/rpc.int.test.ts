import { defineRpc, errors, isAppError } from "@fundraise/protocol";
import Type from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AmqpBus, createAmqpBus, withMessage } from "../src/index.ts";
import { createTestVhost, type TestVhost, waitFor } from "../src/testing/index.ts";
import { rejection, sleep, TestRpc, testLogger } from "./helpers/index.ts";

let vhost: TestVhost;
let client: AmqpBus;
let server: AmqpBus;
const log = testLogger();

beforeAll(async () => {
  vhost = await createTestVhost();
  client = await createAmqpBus({ url: vhost.url, service: "gateway", logger: log });
  server = await createAmqpBus({ url: vhost.url, service: "users", logger: log });
  await server.serve(TestRpc.echo, async ({ text, delayMs }, ctx) => {
    if (delayMs) await sleep(delayMs);
    return { text, requestId: ctx.requestId };
  });
  await server.serve(TestRpc.fail, async ({ how }) => {
    if (how === "not-found") {
      throw errors.notFound("PROJECT_NOT_FOUND", "No such project.", { details: { id: 42 } });
    }
    if (how === "crash") throw new Error("secret connection string in this message");
    if (how === "bad-response") return { ok: "yes" } as never;
    if (how === "noted") return withMessage({ ok: true }, "Done, but the mail could not be sent.");
    return { ok: true };
  });
  await server.serve(TestRpc.context, async (_request, ctx) => ({
    deadline: ctx.deadline ?? null,
    requestId: ctx.requestId,
    traceparent: ctx.traceparent ?? null,
    attempt: ctx.attempt,
  }));
  await server.serve(TestRpc.slow, async ({ ms }) => {
    await sleep(ms);
    return { waited: ms };
  });
});

afterAll(async () => {
  await client?.close();
  await server?.close();
  await vhost?.dispose();
});

describe("RPC over the broker", () => {
  it("round-trips a call", async () => {
    const response = await client.call(TestRpc.echo, { text: "hello" }, { requestId: "req-1" });
    expect(response).toEqual({ text: "hello", requestId: "req-1" });
  });

  it("carries a success reply's message to callWithMessage; plain replies carry null", async () => {
    expect(await client.callWithMessage(TestRpc.fail, { how: "noted" })).toEqual({
      data: { ok: true },
      message: "Done, but the mail could not be sent.",
    });
    expect(await client.call(TestRpc.fail, { how: "noted" })).toEqual({ ok: true });
    expect(await client.callWithMessage(TestRpc.fail, { how: "fine" })).toEqual({
      data: { ok: true },
      message: null,
    });
  });

  it("correlates concurrent calls with their own replies", async () => {
    const texts = Array.from({ length: 60 }, (_, i) => `call-${i}`);
    const responses = await Promise.all(
      texts.map((text, i) =>
        client.call(TestRpc.echo, { text, delayMs: (i * 37) % 50 }, { requestId: `r-${i}` }),
      ),
    );
    expect(responses).toEqual(texts.map((text, i) => ({ text, requestId: `r-${i}` })));
  });

  it("propagates the deadline, request id and trace context to the handler", async () => {
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const before = Date.now();
    const seen = await client.call(TestRpc.context, {}, { timeoutMs: 4000, requestId: "rid-7", traceparent });
    expect(seen.requestId).toBe("rid-7");
    expect(seen.traceparent).toBe(traceparent);
    expect(seen.attempt).toBe(1);
    expect(seen.deadline).not.toBeNull();
    expect(seen.deadline!).toBeGreaterThanOrEqual(before + 4000);
    expect(seen.deadline!).toBeLessThanOrEqual(Date.now() + 4000);
  });

  it("uses the earlier of timeout and an absolute deadline", async () => {
    const deadline = Date.now() + 1500;
    const seen = await client.call(TestRpc.context, {}, { timeoutMs: 60_000, deadline });
    expect(seen.deadline).toBe(deadline);
  });

  it("rehydrates a handler's AppError with kind, code, message and details", async () => {
    const error = await rejection(client.call(TestRpc.fail, { how: "not-found" }));
    expect(isAppError(error)).toBe(true);
    expect(error).toMatchObject({
      kind: "not_found",
      code: "PROJECT_NOT_FOUND",
      message: "No such project.",
      details: { id: 42 },
    });
  });

  it("turns an unexpected failure into a generic internal error", async () => {
    const error = await rejection(client.call(TestRpc.fail, { how: "crash" }));
    expect(error).toMatchObject({
      kind: "internal",
      code: "INTERNAL",
      message: "An unexpected error occurred.",
    });
    expect(String((error as Error).message)).not.toContain("secret");
  });

  it("turns an invalid response into an internal error", async () => {
    const error = await rejection(client.call(TestRpc.fail, { how: "bad-response" }));
    expect(error).toMatchObject({ kind: "internal", code: "INTERNAL" });
  });

  it("rejects an invalid request on the caller's side before sending", async () => {
    const error = await rejection(client.call(TestRpc.echo, { text: 5 } as never));
    expect(error).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
  });

  it("answers a request the server finds invalid with a validation error reply", async () => {
    // Same name, looser schema on the caller's side: only the server's validation can catch it.
    const loose = defineRpc("users.test.echo", {
      request: Type.Object({ text: Type.String() }),
      response: Type.Unknown(),
    });
    const error = await rejection(client.call(loose, { text: "x".repeat(500) }));
    expect(error).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
    expect(Array.isArray((error as { details: unknown }).details)).toBe(true);
  });

  it("times out with an RPC_TIMEOUT timeout error", async () => {
    const error = await rejection(client.call(TestRpc.slow, { ms: 1500 }, { timeoutMs: 300 }));
    expect(error).toMatchObject({ kind: "timeout", code: "RPC_TIMEOUT" });
    expect((error as { status: number }).status).toBe(504);
  });

  it("fails at once with SERVICE_UNAVAILABLE when no instance serves the service", async () => {
    const nobody = defineRpc("projects.test.anything", {
      request: Type.Object({}),
      response: Type.Object({}),
    });
    const started = Date.now();
    const error = await rejection(client.call(nobody, {}, { timeoutMs: 10_000 }));
    expect(error).toMatchObject({ kind: "unavailable", code: "SERVICE_UNAVAILABLE" });
    expect((error as { status: number }).status).toBe(503);
    // The unroutable return answers long before the 10 s deadline.
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("is unavailable once the last instance of a service stops, not a timeout", async () => {
    const Ping = defineRpc("storage.test.ping", { request: Type.Object({}), response: Type.Literal("pong") });
    const storage = await createAmqpBus({ url: vhost.url, service: "storage", logger: log });
    await storage.serve(Ping, async () => "pong" as const);
    expect(await client.call(Ping, {})).toBe("pong");
    await storage.close();
    const error = await rejection(client.call(Ping, {}, { timeoutMs: 10_000 }));
    expect(error).toMatchObject({ kind: "unavailable", code: "SERVICE_UNAVAILABLE" });
  });

  it("answers SERVICE_UNAVAILABLE from an instance that does not serve a name another instance bound", async () => {
    const Extra = defineRpc("users.test.extra", {
      request: Type.Object({}),
      response: Type.Literal("extra"),
    });
    const newer = await createAmqpBus({ url: vhost.url, service: "users", logger: log });
    await newer.serve(Extra, async () => "extra" as const);
    // The binding outlives the instance: the queue lives on while the older instance consumes it.
    await newer.close();
    const error = await rejection(client.call(Extra, {}, { timeoutMs: 5000 }));
    expect(error).toMatchObject({ kind: "unavailable", code: "SERVICE_UNAVAILABLE" });
  });

  it("drops requests that expired before a server took them", async () => {
    let started = 0;
    const Busy = defineRpc("chain.test.busy", {
      request: Type.Object({ ms: Type.Integer() }),
      response: Type.Null(),
    });
    const chain = await createAmqpBus({ url: vhost.url, service: "chain", logger: log, prefetch: 1 });
    try {
      await chain.serve(Busy, async ({ ms }) => {
        started++;
        await sleep(ms);
        return null;
      });
      // The first call occupies the only slot; the second expires in the queue behind it.
      const first = client.call(Busy, { ms: 800 }, { timeoutMs: 5000 });
      // Calls made in one turn would share a message (and a delivery): the second goes once the first runs.
      await waitFor(() => started === 1, 5000, "the first call to start");
      const second = rejection(client.call(Busy, { ms: 0 }, { timeoutMs: 200 }));
      expect(await second).toMatchObject({ kind: "timeout" });
      await first;
      // A third call behind it in the same queue: once it ran, the second would have run before it.
      await client.call(Busy, { ms: 0 }, { timeoutMs: 5000 });
      expect(started).toBe(2);
    } finally {
      await chain.close();
    }
  });
});
