import { randomUUID } from "node:crypto";
import { type AmqpBus, createAmqpBus } from "@fundraise/bus";
import { createTestVhost, type TestVhost, waitFor } from "@fundraise/bus/testing";
import amqp from "amqplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../src/cli/replay.ts";
import {
  BadOptionError,
  JOURNAL_QUEUE,
  type JournalRecord,
  journalWriter,
  type ReplayOptions,
  replayJournal,
  streamBounds,
} from "../src/index.ts";
import { readStream } from "../src/read/reader.ts";
import { TestEvents, TestRpc, testLogger } from "./helpers.ts";

// Plain reads of the journal written by real buses on the local RabbitMQ: records, filters, positions,
// windows, and where a read ends.

let vhost: TestVhost;
let client: AmqpBus;
let server: AmqpBus;
const log = testLogger();

beforeAll(async () => {
  vhost = await createTestVhost("journal_read");
  const journal = journalWriter();
  client = await createAmqpBus({ url: vhost.url, service: "gateway", logger: log, journal });
  server = await createAmqpBus({ url: vhost.url, service: "users", logger: log, journal });
  await server.serve(TestRpc.echo, async ({ text }, ctx) => ({ text, requestId: ctx.requestId }));
  await server.serve(TestRpc.secret, async ({ token }) => ({ jwt: `jwt-for-${token}` }));
  await server.subscribe("audit", TestEvents.happened, async () => undefined);
});

afterAll(async () => {
  await client?.close();
  await server?.close();
  await vhost?.dispose();
});

async function readJournal(options: Partial<ReplayOptions> = {}): Promise<JournalRecord[]> {
  const records: JournalRecord[] = [];
  await replayJournal({ url: vhost.url, ...options, onRecord: (r) => records.push(r) });
  return records;
}

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string[] }> {
  let out = "";
  let err = "";
  const code = await main(["--url", vhost.url, ...argv], {
    out: (text) => (out += text),
    err: (text) => (err += text),
  });
  return { code, out, err: err.split("\n").filter((line) => line !== "") };
}

const offsetOf = (record: JournalRecord) => Number(record.position.split(":")[0]);

describe("reading the journal", () => {
  it("records events, RPC requests and replies with positions and times in ms", async () => {
    const messageId = randomUUID();
    await client.publish(TestEvents.happened, { n: 1 }, { messageId, requestId: "journal-event" });
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
    expect(records.find((r) => r.kind === "event" && r.messageId === messageId)).toMatchObject({
      name: TestEvents.happened.name,
      requestId: "journal-event",
      service: "gateway",
      payload: { n: 1 },
    });
    const request = records.find((r) => r.requestId === "journal-rpc" && r.kind === "rpc-request");
    const reply = records.find((r) => r.requestId === "journal-rpc" && r.kind === "rpc-reply");
    expect(request).toMatchObject({ name: TestRpc.echo.name, payload: { text: "journaled" } });
    expect(reply).toMatchObject({
      service: "users",
      causedBy: request?.id,
      correlationId: request?.correlationId,
    });
    expect(reply?.payload).toEqual({
      data: { text: "journaled", requestId: "journal-rpc" },
      success: true,
      message: null,
    });
    for (const record of records) {
      expect(record.position).toMatch(/^\d+:\d+$/);
      expect(record.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    const offsets = records.map(offsetOf);
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
  });

  it("batches the entries of concurrent calls, and never journals a call that carries secrets", async () => {
    const ids = Array.from({ length: 30 }, (_, i) => `journal-batch-${i}`);
    await Promise.all(ids.map((requestId) => client.call(TestRpc.echo, { text: requestId }, { requestId })));
    await client.call(TestRpc.secret, { token: "s3cret" }, { requestId: "journal-secret" });
    let mine: JournalRecord[] = [];
    await waitFor(
      async () => {
        mine = (await readJournal()).filter((r) => ids.includes(r.requestId ?? ""));
        return mine.length === 2 * ids.length;
      },
      10_000,
      "every entry in the journal",
    );
    expect(new Set(mine.map(offsetOf)).size).toBeLessThan(mine.length);
    const all = JSON.stringify(await readJournal());
    expect(all).not.toContain("s3cret");
    expect(all).not.toContain("journal-secret");
  });

  it("filters by key, kind and limit, and starts and ends at entries inside batches", async () => {
    const all = await readJournal();
    const requests = await readJournal({ kind: "rpc-request", key: "users.test.*" });
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.every((r) => r.kind === "rpc-request" && r.name.startsWith("users.test."))).toBe(true);
    expect(await readJournal({ key: "projects.#" })).toEqual([]);
    expect(await readJournal({ limit: 1 })).toHaveLength(1);
    // A batch with several entries: start at its second, end at the second of the next batch.
    const at = all.findIndex((r, i) => r.position.endsWith(":1") && all[i + 2]?.position !== undefined);
    const [offset] = all[at]!.position.split(":").map(Number);
    const next = all.find((r) => offsetOf(r) > offset! && r.position.endsWith(":1"))!;
    const slice = await readJournal({
      from: { offset: offset!, index: 1 },
      until: { offset: offsetOf(next), index: 1 },
    });
    expect(slice.map((r) => r.position)).toEqual(all.slice(at, all.indexOf(next) + 1).map((r) => r.position));
  });

  it("starts and ends at times in milliseconds", async () => {
    const before = randomUUID();
    const after = randomUUID();
    await client.publish(TestEvents.happened, { n: 2 }, { messageId: before });
    const published = Date.now();
    await waitFor(() => Date.now() > published + 5, 1000, "a few ms");
    const time = Date.now();
    await client.publish(TestEvents.happened, { n: 3 }, { messageId: after });
    const ids = async (options: Partial<ReplayOptions>) =>
      (await readJournal({ kind: "event", ...options })).map((r) => r.messageId);
    await waitFor(async () => (await ids({ from: { at: time } })).includes(after), 5000, "the later event");
    expect(await ids({ from: { at: time } })).not.toContain(before);
    const untilTime = await ids({ from: { at: time - 60_000 }, until: { at: time - 1 } });
    expect(untilTime).toContain(before);
    expect(untilTime).not.toContain(after);
  });

  it("ends a read from a time after the last entry instead of waiting for new ones", async () => {
    const connection = await amqp.connect(vhost.url);
    try {
      const { last } = await streamBounds(connection, JOURNAL_QUEUE);
      // A seek an hour ahead lands past every chunk: the consumer would wait for new messages.
      const start = { "!": "timestamp" as const, value: Math.floor(Date.now() / 1000) + 3600 };
      const delivered = await readStream(connection, {
        queue: JOURNAL_QUEUE,
        start,
        end: last,
        onMessage: () => true,
      });
      expect(delivered).toBe(0);
    } finally {
      await connection.close();
    }
    await waitFor(
      async () => (await readJournal({ from: { at: Date.now() } })).length === 0,
      10_000,
      "a quiet journal",
    );
  });

  it("ends at the journal's end as of the call while another process keeps writing", async () => {
    let writing = true;
    let written = 0;
    const writer = (async () => {
      while (writing) {
        await client.publish(TestEvents.happened, { n: written++ }, { requestId: "busy" });
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    try {
      await waitFor(() => written > 20, 10_000, "a busy journal");
      const summary = await replayJournal({ url: vhost.url });
      expect(summary.read).toBeGreaterThan(0);
      // The read ended while the writer went on.
      const after = written;
      await waitFor(() => written > after + 5, 10_000, "more writes after the read");
    } finally {
      writing = false;
      await writer;
    }
  });

  it("prints JSON lines and a summary through the CLI", async () => {
    const argv = "--from first --type event --key users.test.# --any-key --limit 2".split(" ");
    const { code, out, err } = await cli(...argv);
    expect(code).toBe(0);
    const lines = out
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as JournalRecord);
    expect(lines).toHaveLength(2);
    expect(lines.every((r) => r.kind === "event" && /^\d+:\d+$/.test(r.position))).toBe(true);
    expect(JSON.parse(err.at(-1)!)).toMatchObject({ summary: { matched: 2 } });
  });

  it("refuses positions past the journal's end or beyond their batch, naming the last position", async () => {
    const all = await readJournal();
    const lastOffset = offsetOf(all.at(-1)!);
    for (const argv of [
      ["--from", `offset:${lastOffset + 1000}`],
      ["--from", "first", "--until", `${lastOffset + 1000}:0`],
    ]) {
      const { code, err } = await cli(...argv);
      expect(code).toBe(2);
      expect(err[0]).toMatch(/is past the journal's end \(its last position is \d+:\d+\)$/);
    }
    await expect(
      replayJournal({ url: vhost.url, from: { offset: lastOffset + 1000 } }),
    ).rejects.toBeInstanceOf(BadOptionError);
    const beyond = await cli("--from", `${lastOffset}:999`);
    expect(beyond.code).toBe(2);
    expect(beyond.err[0]).toMatch(
      new RegExp(
        `^--from ${lastOffset}:999: the batch at offset ${lastOffset} has \\d+ entries \\(${lastOffset}:0 to ${lastOffset}:\\d+\\)$`,
      ),
    );
  });

  it("exits 1 with one line when the vhost has no journal", async () => {
    const empty = await createTestVhost("journal_none");
    try {
      let err = "";
      const code = await main(["--url", empty.url], { out: () => undefined, err: (text) => (err += text) });
      expect(code).toBe(1);
      expect(err).toBe(
        "no journal (bus.journal) in this vhost: no bus with journaling has connected to it\n",
      );
    } finally {
      await empty.dispose();
    }
  });
});
