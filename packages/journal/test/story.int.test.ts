import { type AmqpBus, createAmqpBus, timedTraceId, uuidv7 } from "@fundraise/bus";
import { createTestVhost, type TestVhost, waitFor } from "@fundraise/bus/testing";
import { defineEvent, defineRpc, errors } from "@fundraise/protocol";
import Type from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../src/cli/replay.ts";
import { findStory, journalWriter, ReplayError, renderStory, type StoryRecord } from "../src/index.ts";
import { testLogger } from "./helpers.ts";

// A story across two buses on the local RabbitMQ: a gateway-like caller records the HTTP request, calls a
// service, which calls another and publishes an event that two consumers handle, one failing once.

const Rpc = {
  add: defineRpc("projects.test.add", {
    request: Type.Object({ name: Type.String() }),
    response: Type.Object({ id: Type.Integer() }),
  }),
  owner: defineRpc("users.test.owner", { request: Type.Object({}), response: Type.Integer() }),
  taken: defineRpc("projects.test.taken", { request: Type.Object({}), response: Type.Null() }),
} as const;
const Events = { added: defineEvent("projects.test.added", Type.Object({ id: Type.Integer() })) } as const;

let vhost: TestVhost;
let gateway: AmqpBus;
let service: AmqpBus;
const failed = new Set<string>();

beforeAll(async () => {
  vhost = await createTestVhost("journal_story");
  const log = testLogger();
  // Entries written more than 200 ms after their request started also go to the late stream.
  const journal = journalWriter({ lateAfterMs: 200 });
  gateway = await createAmqpBus({ url: vhost.url, service: "gateway", logger: log, journal });
  service = await createAmqpBus({ url: vhost.url, service: "projects", logger: log, journal });
  await service.serve(Rpc.owner, async () => 7);
  await service.serve(Rpc.taken, async () => {
    throw errors.conflict("PROJECT_NAME_TAKEN", "That name is taken.");
  });
  await service.serve(Rpc.add, async (_request, ctx) => {
    const owner = await service.call(Rpc.owner, {}, ctx);
    const { requestId, causedBy, traceparent } = ctx;
    await service.publish(Events.added, { id: owner }, { requestId, causedBy, traceparent });
    return { id: owner };
  });
  await service.subscribe("audit", Events.added, async () => undefined);
  await service.subscribe(
    "mailer",
    Events.added,
    async (_event, ctx) => {
      if (failed.has(ctx.messageId)) return;
      failed.add(ctx.messageId);
      throw new Error("boom");
    },
    { retryDelayMs: 100 },
  );
});

afterAll(async () => {
  await gateway?.close();
  await service?.close();
  await vhost?.dispose();
});

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await main(["--url", vhost.url, ...argv], {
    out: (text) => (out += text),
    err: (text) => (err += text),
  });
  return { code, out, err };
}

/** What a gateway does for one HTTP request: its calls, then its own entry once it answered. */
async function httpRequest(requestId: string, work: () => Promise<unknown>, status = 201): Promise<void> {
  const started = Date.now();
  await work().catch(() => undefined);
  gateway.note({
    kind: "http",
    id: `http:${requestId}`,
    name: "POST /Test/Add",
    at: Date.now(),
    requestId,
    summary: { method: "POST", route: "/Test/Add", status, durationMs: Date.now() - started },
  });
}

/** Waits until the story has `n` entries (writers flush every 100 ms, retries come later). */
async function storyOf(requestId: string, n: number) {
  let found: Awaited<ReturnType<typeof findStory>> | undefined;
  await waitFor(
    async () => {
      found = await findStory({ url: vhost.url, requestId }).catch(() => undefined);
      return (found?.entries.length ?? 0) >= n;
    },
    20_000,
    `${n} entries of ${requestId}`,
  );
  return found!;
}

describe("a request's story", () => {
  it("draws the HTTP request, its calls with replies, the event and each consumer's tries", async () => {
    const requestId = uuidv7();
    await httpRequest(requestId, async () => {
      await gateway.call(Rpc.add, { name: "x" }, { requestId });
      await gateway.call(Rpc.taken, {}, { requestId });
    });
    // http, add + reply, owner + reply, taken + reply, event, audit #1, mailer #1 (retried), mailer #2
    const found = await storyOf(requestId, 11);
    expect(found.entries).toHaveLength(11);
    expect(found.window.t0).toBeDefined();
    const lines = renderStory(found.tree);
    expect(lines[0]).toMatch(
      new RegExp(
        `^POST /Test/Add 201 \\d+ ms  \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z  request ${requestId} \\(gateway\\)$`,
      ),
    );
    expect(lines[1]).toMatch(/^├─ \+\d+ms +projects\.test\.add \(gateway\) → projects \d+ ms ok$/);
    expect(lines[2]).toMatch(/^│ {2}├─ \+\d+ms +users\.test\.owner \(projects\) → projects \d+ ms ok$/);
    expect(lines[3]).toMatch(/^│ {2}└─ \+\d+ms +event projects\.test\.added \(projects\)$/);
    const deliveries = lines.slice(4, 7).join("\n");
    // Consumers run in the "projects" process: each line names it.
    expect(deliveries).toMatch(/audit {2}#1 acked \d+ ms {2}\(projects\)/);
    expect(deliveries).toMatch(
      /mailer {2}#1 retried \d+ ms {2}"Error: boom" {2}retry in 100 ms {2}\(projects\)\n.* {6} {2}#2 acked/,
    );
    expect(lines[7]).toMatch(
      /^└─ \+\d+ms +projects\.test\.taken \(gateway\) → projects \d+ ms 409 PROJECT_NAME_TAKEN {2}"That name is taken\."$/,
    );
    expect(lines).toHaveLength(8);
  });

  it("prints the story through the CLI, as a tree or as JSON lines", async () => {
    const requestId = uuidv7();
    await httpRequest(requestId, () => gateway.call(Rpc.owner, {}, { requestId }), 200);
    await storyOf(requestId, 3);
    const tree = await cli("--request", requestId);
    expect(tree.code).toBe(0);
    expect(tree.out.split("\n")[1]).toMatch(/users\.test\.owner \(gateway\) → projects \d+ ms ok/);
    const json = await cli("--request", requestId, "--json");
    const records = json.out
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as StoryRecord);
    expect(
      records.map((r) => [
        r.kind,
        r.depth,
        r.parent === null ? null : r.kind === "rpc-request" ? "http" : "request",
      ]),
    ).toEqual([
      ["http", 0, null],
      ["rpc-request", 1, "http"],
      ["rpc-reply", 2, "request"],
    ]);
    expect(records[1]?.position).toMatch(/^\d+:\d+$/);
    expect(records[2]?.payload).toEqual({ data: 7, success: true, message: null });
  });

  it("finds an entry written long after its request started in the late stream", async () => {
    // A request that started ten minutes ago: its main-stream window is long past.
    const requestId = uuidv7(Date.now() - 600_000);
    await gateway.call(Rpc.owner, {}, { requestId });
    const found = await storyOf(requestId, 2);
    expect(found.entries.map((e) => e.kind).sort()).toEqual(["rpc-reply", "rpc-request"]);
    expect([...found.positions.values()].every((p) => p.startsWith("late:"))).toBe(true);
  });

  it("finds a trace, and reads the whole journal for an id without a time, saying so", async () => {
    const requestId = `client-${Date.now()}`;
    const traceId = timedTraceId();
    await gateway.call(Rpc.owner, {}, { requestId, traceparent: `00-${traceId}-${"1".repeat(16)}-01` });
    const found = await storyOf(requestId, 2);
    expect(found.window.from).toBeUndefined();
    const byTrace = await findStory({ url: vhost.url, traceId });
    expect(byTrace.entries.length).toBeGreaterThanOrEqual(2);
    expect(byTrace.entries.every((e) => e.traceId === traceId)).toBe(true);
    const printed = await cli("--request", requestId);
    expect(printed.code).toBe(0);
    expect(printed.err.trim()).toBe(
      `request id ${requestId} carries no time: reading the whole journal for it`,
    );
  });

  it("exits 1 with one line when nothing is found", async () => {
    const requestId = uuidv7(Date.now() - 60_000);
    await expect(findStory({ url: vhost.url, requestId })).rejects.toBeInstanceOf(ReplayError);
    const printed = await cli("--request", requestId);
    expect(printed.code).toBe(1);
    expect(printed.err).toMatch(
      new RegExp(`^no journal entry of request ${requestId} between \\S+Z and \\S+Z\\n$`),
    );
  });
});
