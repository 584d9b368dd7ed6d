import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { type AmqpBus, createAmqpBus, Header, subscriptionQueueOf } from "@fundraise/bus";
import { createTestVhost, type TestVhost, waitFor } from "@fundraise/bus/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type JournalRecord, journalWriter, type ReplayOptions, replayJournal } from "../src/index.ts";
import { TestEvents, TestRpc, testLogger } from "./helpers.ts";

const run = promisify(execFile);
const packageDir = fileURLToPath(new URL("..", import.meta.url));

let vhost: TestVhost;
let client: AmqpBus;
let server: AmqpBus;
const log = testLogger();
/** messageId → times the `audit` consumer handled it. */
const audited = new Map<string, number>();

beforeAll(async () => {
  vhost = await createTestVhost();
  const journal = journalWriter();
  client = await createAmqpBus({ url: vhost.url, service: "gateway", logger: log, journal });
  server = await createAmqpBus({ url: vhost.url, service: "users", logger: log, journal });
  await server.serve(TestRpc.echo, async ({ text }, ctx) => ({ text, requestId: ctx.requestId }));
  await server.serve(TestRpc.secret, async ({ token }) => ({ jwt: `jwt-for-${token}` }));
  await server.subscribe("audit", TestEvents.happened, async (_payload, ctx) => {
    audited.set(ctx.messageId, (audited.get(ctx.messageId) ?? 0) + 1);
  });
});

afterAll(async () => {
  await client?.close();
  await server?.close();
  await vhost?.dispose();
});

async function readJournal(options: Partial<ReplayOptions> = {}): Promise<JournalRecord[]> {
  const records: JournalRecord[] = [];
  await replayJournal({
    url: vhost.url,
    from: "first",
    idleMs: 500,
    ...options,
    onRecord: (r) => records.push(r),
  });
  return records;
}

describe("journal", () => {
  it("journals events, RPC requests and RPC replies", async () => {
    const eventId = randomUUID();
    await client.publish(TestEvents.happened, { n: 1 }, { messageId: eventId, requestId: "journal-event" });
    await client.call(TestRpc.echo, { text: "journaled" }, { requestId: "journal-rpc" });

    let records: JournalRecord[] = [];
    await waitFor(
      async () => {
        records = await readJournal();
        return records.filter((r) => r.requestId === "journal-rpc").length === 2;
      },
      10_000,
      "request and reply in the journal",
    );
    const event = records.find((r) => r.messageId === eventId);
    expect(event).toMatchObject({
      kind: "event",
      exchange: "events",
      routingKey: TestEvents.happened.name,
      requestId: "journal-event",
      payload: { n: 1 },
    });
    expect(event?.headers[Header.PUBLISHED_BY]).toBe("gateway");

    const request = records.find((r) => r.requestId === "journal-rpc" && r.kind === "rpc-request");
    const reply = records.find((r) => r.requestId === "journal-rpc" && r.kind === "rpc-reply");
    expect(request).toMatchObject({ routingKey: TestRpc.echo.name, payload: { text: "journaled" } });
    expect(reply).toMatchObject({
      routingKey: TestRpc.echo.name,
      payload: { data: { text: "journaled", requestId: "journal-rpc" }, success: true, message: null },
    });
    expect(reply?.correlationId).toBe(request?.correlationId);
    expect(reply?.headers[Header.PUBLISHED_BY]).toBe("users");

    // Offsets are the stream's: increasing in journal order.
    const offsets = records.map((r) => r.offset ?? -1);
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
  });

  it("batches the copies of concurrent calls: every request and reply once, in fewer journal messages", async () => {
    const ids = Array.from({ length: 50 }, (_, i) => `journal-batch-${i}`);
    await Promise.all(ids.map((requestId) => client.call(TestRpc.echo, { text: requestId }, { requestId })));
    let mine: JournalRecord[] = [];
    await waitFor(
      async () => {
        mine = (await readJournal()).filter((r) => ids.includes(r.requestId ?? ""));
        return mine.length === 2 * ids.length;
      },
      10_000,
      "every copy in the journal",
    );
    for (const requestId of ids) {
      const copies = mine.filter((r) => r.requestId === requestId);
      expect(copies.map((r) => r.kind).sort()).toEqual(["rpc-reply", "rpc-request"]);
      expect(copies.find((r) => r.kind === "rpc-request")?.payload).toEqual({ text: requestId });
    }
    const messages = new Set(mine.map((r) => r.offset));
    expect(messages.size).toBeLessThan(mine.length);
    expect(mine.filter((r) => r.index !== undefined).length).toBeGreaterThan(0);
  });

  it("never journals a call marked as carrying secrets, in either direction", async () => {
    expect(await client.call(TestRpc.secret, { token: "s3cret" }, { requestId: "journal-secret" })).toEqual({
      jwt: "jwt-for-s3cret",
    });
    await client.call(TestRpc.echo, { text: "after" }, { requestId: "after-secret" });
    let records: JournalRecord[] = [];
    await waitFor(
      async () => {
        records = await readJournal();
        return records.filter((r) => r.requestId === "after-secret").length === 2;
      },
      10_000,
      "the later call in the journal",
    );
    expect(records.filter((r) => r.requestId === "journal-secret")).toEqual([]);
    expect(JSON.stringify(records)).not.toContain("s3cret");
  });

  it("filters by routing-key pattern, kind and limit, and starts at an offset", async () => {
    const all = await readJournal();
    const requests = await readJournal({ kind: "rpc-request", key: "users.test.*" });
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.every((r) => r.kind === "rpc-request" && r.routingKey.startsWith("users.test."))).toBe(
      true,
    );
    expect(await readJournal({ key: "projects.#" })).toEqual([]);
    expect(await readJournal({ limit: 1 })).toHaveLength(1);
    // A stream offset names a journal message: a batch of copies is read from its first entry.
    const start = all.findIndex((r, i) => i >= 2 && r.offset !== all[i - 1]?.offset);
    const third = all[start]!;
    const fromThird = await readJournal({ from: { offset: third.offset! } });
    expect(fromThird[0]?.offset).toBe(third.offset);
    expect(fromThird).toHaveLength(all.length - start);
  });

  it("starts at a point in time", async () => {
    const before = randomUUID();
    const after = randomUUID();
    await client.publish(TestEvents.happened, { n: 2 }, { messageId: before });
    // AMQP timestamps and stream seeking work in whole seconds: start in a second after the confirmed one.
    const confirmed = Math.floor(Date.now() / 1000);
    await waitFor(() => Math.floor(Date.now() / 1000) > confirmed, 2000, "the next second");
    const time = new Date();
    await client.publish(TestEvents.happened, { n: 3 }, { messageId: after });
    const records = await readJournal({ from: { time } });
    const ids = records.map((r) => r.messageId);
    expect(ids).toContain(after);
    expect(ids).not.toContain(before);
  });

  it("re-publishes a journaled event to its consumers", async () => {
    const messageId = randomUUID();
    await client.publish(TestEvents.happened, { n: 10 }, { messageId });
    await waitFor(() => audited.get(messageId) === 1, 5000, "first delivery");
    const summary = await replayJournal({
      url: vhost.url,
      from: "first",
      idleMs: 500,
      key: TestEvents.happened.name,
      kind: "event",
      republish: true,
    });
    expect(summary.republished).toBeGreaterThan(0);
    await waitFor(() => audited.get(messageId) === 2, 5000, "replayed delivery");

    // The replays are journaled too, marked, and not replayed again by default.
    const records = await readJournal({ key: TestEvents.happened.name });
    const copies = records.filter((r) => r.messageId === messageId);
    expect(copies).toHaveLength(2);
    expect(copies[1]?.headers[Header.REPLAYED_FROM_OFFSET]).toBe(copies[0]?.offset);
    const again = await readJournal({ key: TestEvents.happened.name, republish: true, dryRun: true });
    const actions = again.filter((r) => r.messageId === messageId).map((r) => r.action);
    expect(actions).toEqual(["would-republish", "skipped"]);
    // A marker published after the dry run: once it is in, anything the dry run had published is too.
    const marker = randomUUID();
    await client.publish(TestEvents.happened, { n: 11 }, { messageId: marker });
    await waitFor(() => audited.get(marker) === 1, 5000, "the marker");
    expect(audited.get(messageId)).toBe(2);
  });

  it("replays through the CLI: prints JSON lines and re-publishes to one queue", async () => {
    const messageId = randomUUID();
    await client.publish(TestEvents.happened, { n: 20 }, { messageId, requestId: "cli-event" });
    await waitFor(() => audited.get(messageId) === 1, 5000, "first delivery");
    const cli = (args: string[]) =>
      run(process.execPath, ["--import", "tsx", "src/cli/replay.ts", "--", "--url", vhost.url, ...args], {
        cwd: packageDir,
        timeout: 30_000,
      });

    const printed = await cli([
      "--from",
      "first",
      "--type",
      "event",
      "--key",
      "users.test.#",
      "--idle-ms",
      "500",
    ]);
    const lines = printed.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as JournalRecord);
    const line = lines.find((r) => r.messageId === messageId);
    expect(line).toMatchObject({ kind: "event", requestId: "cli-event", payload: { n: 20 } });
    expect(lines.every((r) => r.kind === "event")).toBe(true);
    expect(printed.stderr).toContain('"summary"');

    const offset = line!.offset!;
    const replayed = await cli([
      "--from",
      String(offset),
      "--limit",
      "1",
      "--republish",
      "--to-queue",
      subscriptionQueueOf("audit", TestEvents.happened.name),
    ]);
    expect(JSON.parse(replayed.stdout.trim())).toMatchObject({ messageId, action: "republished", offset });
    await waitFor(() => audited.get(messageId) === 2, 5000, "delivery replayed by the CLI");
  });

  it("exits with a usage error on bad arguments", async () => {
    const failed = await run(process.execPath, ["--import", "tsx", "src/cli/replay.ts", "--type", "nope"], {
      cwd: packageDir,
    }).catch((error: { code: number; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 2 });
    expect((failed as { stderr: string }).stderr).toContain("--type must be one of");
  });
});
