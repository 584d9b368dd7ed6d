import { Header } from "@fundraise/bus";
import { describe, expect, it } from "vitest";
import { parseCli } from "../src/cli/args.ts";
import { encodeBatch, type JournalEntry } from "../src/format.ts";
import { keyMatches } from "../src/read/catalog.ts";
import { Selection } from "../src/read/select.ts";
import { matchesFilter, recordOf, topicMatches } from "../src/records.ts";
import { decide, PERSONAL_REASON, REPLAYED_FROM, republishedMessage } from "../src/republish.ts";

const AT = Date.UTC(2026, 10, 27, 10, 0, 0, 123);
const event = (fields: Partial<JournalEntry> = {}): JournalEntry => ({
  id: "m1",
  kind: "event",
  name: "users.user.deleted",
  at: AT,
  service: "users",
  requestId: "r1",
  messageId: "m1",
  properties: {
    messageId: "m1",
    type: "users.user.deleted",
    contentType: "application/json",
    timestamp: Math.floor(AT / 1000),
    headers: { [Header.REQUEST_ID]: "r1", [Header.DEADLINE]: 1, [Header.STREAM_OFFSET]: 4 },
  },
  body: Buffer.from(JSON.stringify({ userId: 7 })),
  ...fields,
});

describe("topicMatches and keyMatches", () => {
  it.each([
    ["users.user.deleted", "users.user.deleted", true],
    ["users.*.deleted", "users.user.deleted", true],
    ["users.*", "users.user.deleted", false],
    ["users.#", "users.user.deleted", true],
    ["#.deleted", "users.user.deleted", true],
    ["users.#.deleted", "users.deleted", true],
    ["projects.#", "users.user.deleted", false],
  ])("%s ~ %s → %s", (pattern, key, expected) => {
    expect(topicMatches(pattern, key)).toBe(expected);
  });

  it("matches http entries by http, their method or their whole name", () => {
    expect(keyMatches("http", "http", "POST /Project/Add")).toBe(true);
    expect(keyMatches("POST", "http", "POST /Project/Add")).toBe(true);
    expect(keyMatches("POST /Project/Add", "http", "POST /Project/Add")).toBe(true);
    expect(keyMatches("#", "http", "POST /Project/Add")).toBe(true);
    expect(keyMatches("GET", "http", "POST /Project/Add")).toBe(false);
    expect(keyMatches("users.#", "http", "POST /Project/Add")).toBe(false);
  });
});

describe("records", () => {
  it("carry the position, the time in ISO with ms, the headers but the offset, and the payload", () => {
    const record = recordOf(event(), "12:3");
    expect(record).toMatchObject({
      position: "12:3",
      at: "2026-11-27T10:00:00.123Z",
      kind: "event",
      name: "users.user.deleted",
      messageId: "m1",
      requestId: "r1",
      payload: { userId: 7 },
      properties: { contentType: "application/json", messageId: "m1" },
    });
    expect(record.headers).toEqual({ [Header.REQUEST_ID]: "r1", [Header.DEADLINE]: 1 });
  });

  it("keep undecodable bodies visible instead of failing", () => {
    expect(recordOf(event({ body: Buffer.from("{not json") }), "0:0").payload).toMatchObject({
      $undecodable: 9,
    });
  });

  it("filter by key, kind and time in ms", () => {
    const entry = event();
    expect(matchesFilter(entry, {})).toBe(true);
    expect(matchesFilter(entry, { key: "users.#", kind: "event" })).toBe(true);
    expect(matchesFilter(entry, { kind: "delivery" })).toBe(false);
    expect(matchesFilter(entry, { notBefore: AT })).toBe(true);
    expect(matchesFilter(entry, { notBefore: AT + 1 })).toBe(false);
    expect(matchesFilter(entry, { notAfter: AT - 1 })).toBe(false);
  });
});

describe("which entries a read decodes and keeps", () => {
  const message = (entries: JournalEntry[]) => {
    const batch = encodeBatch(entries, "users");
    return { content: batch.body, properties: batch.properties, fields: {} } as never;
  };

  it("skips batches wholly before --from undecoded and stops far past --until", () => {
    const selection = new Selection({ from: { at: AT + 10 }, until: { at: AT + 100 } });
    expect(selection.batch(message([event()]), 1)).toBe("skip");
    expect(selection.batch(message([event({ at: AT + 50 })]), 1)).toBe("read");
    expect(selection.batch(message([event({ at: AT + 2101 })]), 1)).toBe("stop");
  });

  it("starts and ends inside batches, and refuses an index its batch does not have", () => {
    const selection = new Selection({ from: { offset: 5, index: 1 }, until: { offset: 7, index: 0 } });
    expect(selection.entry(event(), 5, 0)).toBe("skip");
    expect(selection.entry(event(), 5, 1)).toBe("take");
    expect(selection.entry(event(), 7, 0)).toBe("take");
    expect(selection.entry(event(), 7, 1)).toBe("stop");
    expect(() => selection.checkIndexes(5, 1)).toThrow(
      "--from 5:1: the batch at offset 5 has 1 entries (5:0 to 5:0)",
    );
    expect(() => selection.checkIndexes(5, 2)).not.toThrow();
  });
});

describe("republish decisions", () => {
  const rpc = (name: string) => event({ id: "q1", kind: "rpc-request", name });

  it("sends events by default, to the events exchange or the queue given", () => {
    expect(decide(event(), {})).toEqual({ target: { exchange: "events", routingKey: "users.user.deleted" } });
    expect(decide(event(), { toQueue: "q" })).toEqual({ target: { queue: "q" } });
  });

  it("sends RPC requests only with --include-rpc, and writes only with --allow-writes", () => {
    expect(decide(rpc("users.user.get"), {})).toMatchObject({
      action: "skipped",
      reason: expect.stringContaining("--include-rpc"),
    });
    expect(decide(rpc("users.user.get"), { includeRpc: true })).toEqual({
      target: { exchange: "rpc", routingKey: "users.user.get" },
    });
    expect(decide(rpc("users.user.delete"), { includeRpc: true })).toEqual({
      action: "refused",
      reason: "users.user.delete is a write RPC: re-executed only with --allow-writes",
    });
    expect(decide(rpc("tests.thing.do"), { includeRpc: true })).toMatchObject({
      action: "refused",
      reason: expect.stringContaining("does not know"),
    });
    expect(decide(rpc("users.user.delete"), { includeRpc: true, allowWrites: true })).toHaveProperty(
      "target",
    );
  });

  it("never sends replies, http or delivery entries, replays (by default) or replaced personal data", () => {
    expect(decide(event({ kind: "rpc-reply" }), { includeRpc: true, allowWrites: true })).toMatchObject({
      action: "skipped",
    });
    expect(decide(event({ kind: "http", properties: undefined, body: undefined }), {})).toMatchObject({
      action: "skipped",
    });
    expect(decide(event({ kind: "delivery", properties: undefined, body: undefined }), {})).toMatchObject({
      action: "skipped",
    });
    expect(decide(event({ redacted: ["/email"] }), {})).toEqual({
      action: "skipped",
      reason: PERSONAL_REASON,
    });
    expect(decide(event({ redacted: ["(header)"] }), {})).toHaveProperty("target");
    const replay = event({ properties: { headers: { [REPLAYED_FROM]: "1:0" } } });
    expect(decide(replay, {})).toMatchObject({
      action: "skipped",
      reason: expect.stringContaining("already a replay"),
    });
    expect(decide(replay, { includeReplayed: true })).toHaveProperty("target");
  });

  it("marks the copy with where it came from, drops its deadline and the broker's headers, keeps or renews its id", () => {
    const { body, properties } = republishedMessage(event(), "12:3", false);
    expect(JSON.parse(body.toString())).toEqual({ userId: 7 });
    expect(properties).toMatchObject({ messageId: "m1", type: "users.user.deleted", persistent: true });
    expect(properties.headers).toEqual({
      [Header.REQUEST_ID]: "r1",
      [REPLAYED_FROM]: "12:3",
      [Header.REPLAYED_FROM_OFFSET]: 12,
    });
    expect(republishedMessage(event(), "12:3", true).properties.messageId).not.toBe("m1");
  });
});

describe("relative times on the command line", () => {
  it("takes --from -10m and --until -500ms as values", () => {
    const command = parseCli(["--from", "-10m", "--until", "-500ms"], AT);
    expect(command).toMatchObject({ options: { from: { at: AT - 600_000 }, until: { at: AT - 500 } } });
  });
});
