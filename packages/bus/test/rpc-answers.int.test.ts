import { defineRpc, ErrorCode, errors } from "@fundraise/protocol";
import Type from "typebox";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type AmqpBus, createAmqpBus, type RequestKey, withMessage } from "../src/index.ts";
import { createMemoryAnswers, createTestVhost, type TestVhost, waitFor } from "../src/testing/index.ts";
import { rejection, TestRpc, testLogger } from "./helpers/index.ts";

// A server that keeps answers (rpc-answers.ts, ADR 0029): a keyed request is answered once, whatever
// reaches it again with the key; the broker between them is the real one.
const Count = defineRpc("users.test.count", {
  request: Type.Object({ by: Type.Integer(), fail: Type.Optional(Type.Boolean()) }),
  response: Type.Object({ total: Type.Integer() }),
});
/** An answer that is a secret (a token): never kept at rest. */
const Token = defineRpc("users.test.token", {
  request: Type.Object({}),
  response: Type.Object({ token: Type.String() }),
  answerKept: false,
});
const Relay = defineRpc("users.test.relay", {
  request: Type.Object({}),
  response: Type.Object({ text: Type.String() }),
});
/** A write that waits for the test to let it finish (`release`), to have copies of it arrive meanwhile. */
const Slow = defineRpc("users.test.slow", {
  request: Type.Object({ fail: Type.Optional(Type.Boolean()) }),
  response: Type.Object({ run: Type.Integer() }),
});
let release: () => void = () => undefined;

let vhost: TestVhost;
let client: AmqpBus;
let server: AmqpBus;
const log = testLogger();
const answers = createMemoryAnswers();
let total = 0;
let runs = 0;

beforeAll(async () => {
  vhost = await createTestVhost();
  [client, server] = await Promise.all([
    createAmqpBus({ url: vhost.url, service: "gateway", logger: log }),
    createAmqpBus({ url: vhost.url, service: "users", logger: log }),
  ]);
  server.keepAnswers(answers);
  await server.serve(Count, async ({ by, fail }) => {
    runs += 1;
    if (fail) throw errors.conflict(ErrorCode.INVITATION_EXISTS, "already invited");
    total += by;
    return withMessage({ total }, `added ${by}`);
  });
  await server.serve(TestRpc.echo, async ({ text }, ctx) => ({ text, requestId: ctx.requestId }));
  await server.serve(Token, async () => {
    runs += 1;
    return { token: `token ${runs}` };
  });
  await server.serve(Slow, async ({ fail }) => {
    const run = ++runs;
    await new Promise<void>((resolve) => {
      release = resolve;
    });
    if (fail) throw errors.conflict(ErrorCode.INVITATION_EXISTS, "already invited");
    return { run };
  });
  // A handler that calls another RPC of the same server with its own ctx.
  await server.serve(Relay, async (_request, ctx) => {
    const { text } = await server.call(TestRpc.echo, { text: "inner" }, ctx);
    return { text: `outer of ${text}` };
  });
});

afterAll(async () => {
  await Promise.all([client?.close(), server?.close()]);
  await vhost?.dispose();
});

beforeEach(() => {
  answers.kept.clear();
  answers.held.clear();
  runs = 0;
});

const keyed = (key: string, fingerprint = "f1"): { idempotency: RequestKey } => ({
  idempotency: { key, fingerprint },
});

describe("kept answers to keyed requests", () => {
  it("answers the same key and request again with the kept answer, without running the handler", async () => {
    const first = await client.callWithMessage(Count, { by: 2 }, keyed("u1:a"));
    const again = await client.callWithMessage(Count, { by: 2 }, keyed("u1:a"));
    // The kept answer says it is one, so that the gateway can answer `Idempotent-Replayed: true`.
    expect(again).toEqual({ ...first, replayed: true });
    expect(first.replayed).toBeUndefined();
    expect(first.message).toBe("added 2");
    expect(runs).toBe(1);
    expect(answers.kept.get("u1:a")).toEqual({
      fingerprint: "f1",
      envelope: { data: first.data, success: true, message: "added 2" },
    });
  });

  it("keeps no answer that is a secret: a keyed retry of a sign-in runs again", async () => {
    const first = await client.call(Token, {}, keyed("u1:t"));
    const again = await client.call(Token, {}, keyed("u1:t"));
    expect([first.token, again.token]).toEqual(["token 1", "token 2"]);
    expect(answers.kept.has("u1:t")).toBe(false);
  });

  it("refuses the kept key with another request: 409 IDEMPOTENCY_KEY_REUSED, nothing run", async () => {
    await client.call(Count, { by: 1 }, keyed("u1:b"));
    const error = await rejection(client.call(Count, { by: 5 }, keyed("u1:b", "f2")));
    expect(error).toMatchObject({ kind: "conflict", code: ErrorCode.IDEMPOTENCY_KEY_REUSED });
    expect(runs).toBe(1);
  });

  it("keeps nothing of a failure: the retry with the key runs", async () => {
    const error = await rejection(client.call(Count, { by: 1, fail: true }, keyed("u1:c")));
    expect(error).toMatchObject({ kind: "conflict", code: ErrorCode.INVITATION_EXISTS });
    expect(answers.kept.has("u1:c")).toBe(false);
    await client.call(Count, { by: 1 }, keyed("u1:c", "f1"));
    expect(runs).toBe(2);
    expect(answers.kept.has("u1:c")).toBe(true);
  });

  it("answers a success whose answer cannot be kept", async () => {
    answers.failNextKeep = true;
    const before = total;
    expect(await client.call(Count, { by: 3 }, keyed("u1:d"))).toEqual({ total: before + 3 });
    expect(answers.kept.size).toBe(0);
  });

  it("looks nothing up and keeps nothing without a key", async () => {
    await client.call(Count, { by: 1 });
    await client.call(Count, { by: 1 });
    expect(runs).toBe(2);
    expect(answers.kept.size).toBe(0);
  });

  it("keeps each request of a batch under its own key", async () => {
    // One turn: the two calls travel as one message.
    const [a, b] = await Promise.all([
      client.call(TestRpc.echo, { text: "a" }, { ...keyed("u1:e"), requestId: "ra" }),
      client.call(TestRpc.echo, { text: "b" }, { ...keyed("u2:e", "f9"), requestId: "rb" }),
    ]);
    expect([answers.kept.get("u1:e")?.envelope.data, answers.kept.get("u2:e")?.envelope.data]).toEqual([
      a,
      b,
    ]);
    expect(answers.kept.get("u2:e")?.fingerprint).toBe("f9");
  });

  it("runs one copy of a keyed request at a time: a copy that arrives meanwhile is 409 IN_USE", async () => {
    const first = client.call(Slow, {}, keyed("u1:g"));
    await waitFor(async () => runs === 1, 5_000, "the first run");
    for (let copy = 0; copy < 5; copy++) {
      const error = await rejection(client.call(Slow, {}, keyed("u1:g")));
      expect(error).toMatchObject({ kind: "conflict", code: ErrorCode.IDEMPOTENCY_KEY_IN_USE });
    }
    // Another request under the key is refused as such, also while the key is held.
    const other = await rejection(client.call(Slow, { fail: true }, keyed("u1:g", "f2")));
    expect(other).toMatchObject({ kind: "conflict", code: ErrorCode.IDEMPOTENCY_KEY_REUSED });
    release();
    expect(await first).toEqual({ run: 1 });
    expect(await client.callWithMessage(Slow, {}, keyed("u1:g"))).toEqual({
      data: { run: 1 },
      message: null,
      replayed: true,
    });
    expect(runs).toBe(1);
  });

  it("frees the key of a run that failed: the copy waiting for it runs", async () => {
    const first = rejection(client.call(Slow, { fail: true }, keyed("u1:h")));
    await waitFor(async () => runs === 1, 5_000, "the first run");
    release();
    expect(await first).toMatchObject({ code: ErrorCode.INVITATION_EXISTS });
    const again = client.call(Slow, {}, keyed("u1:h"));
    await waitFor(async () => runs === 2, 5_000, "the second run");
    release();
    expect(await again).toEqual({ run: 2 });
  });

  it("does not pass the key on to the calls a handler makes with its ctx", async () => {
    const first = await client.call(Relay, {}, keyed("u1:f"));
    expect(first).toEqual({ text: "outer of inner" });
    expect([...answers.kept.keys()]).toEqual(["u1:f"]);
    expect(await client.call(Relay, {}, keyed("u1:f"))).toEqual(first);
  });
});
