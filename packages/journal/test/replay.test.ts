import { encodeBody, Header } from "@fundraise/bus";
import { describe, expect, it } from "vitest";
import { parseCli } from "../src/cli/args.ts";
import {
  kindOf,
  matchesFilter,
  parseFrom,
  republishTarget,
  streamOffsetArgument,
  topicMatches,
  toRecord,
} from "../src/records.ts";

describe("topicMatches", () => {
  it.each([
    ["users.user.deleted", "users.user.deleted", true],
    ["users.user.deleted", "users.user.created", false],
    ["users.*.deleted", "users.user.deleted", true],
    ["users.*", "users.user.deleted", false],
    ["users.#", "users.user.deleted", true],
    ["users.#", "users", true],
    ["#", "anything.at.all", true],
    ["#.deleted", "users.user.deleted", true],
    ["#.deleted", "users.user.created", false],
    ["users.#.deleted", "users.deleted", true],
    ["*.user.*", "users.user.role-changed", true],
    ["*", "users.user", false],
    ["projects.#", "users.user.deleted", false],
  ])("%s ~ %s → %s", (pattern, key, expected) => {
    expect(topicMatches(pattern, key)).toBe(expected);
  });
});

describe("parseFrom", () => {
  it("accepts the stream's named positions, offsets and ISO times", () => {
    expect(parseFrom("first")).toBe("first");
    expect(parseFrom("last")).toBe("last");
    expect(parseFrom("next")).toBe("next");
    expect(parseFrom("42")).toEqual({ offset: 42 });
    expect(parseFrom("offset:42")).toEqual({ offset: 42 });
    expect(parseFrom("offset 7")).toEqual({ offset: 7 });
    expect(parseFrom("2026-01-02T03:04:05Z")).toEqual({ time: new Date("2026-01-02T03:04:05Z") });
    expect(() => parseFrom("yesterday")).toThrow(/--from/);
  });

  it("turns times into AMQP timestamps in seconds", () => {
    expect(streamOffsetArgument({ time: new Date("2026-01-02T03:04:05.900Z") })).toEqual({
      "!": "timestamp",
      value: Date.parse("2026-01-02T03:04:05Z") / 1000,
    });
    expect(streamOffsetArgument({ offset: 3 })).toBe(3);
    expect(streamOffsetArgument("first")).toBe("first");
  });
});

describe("journal records and filters", () => {
  const message = (routingKey: string, payload: unknown, headers: Record<string, unknown>) => {
    const { body, contentType } = encodeBody(payload);
    return {
      content: body,
      fields: { exchange: "events", routingKey, deliveryTag: 1, redelivered: false, consumerTag: "c" },
      properties: {
        contentType,
        headers,
        messageId: "m1",
        timestamp: 1_700_000_000,
        type: routingKey,
      },
    } as unknown as Parameters<typeof toRecord>[0];
  };

  it("decodes the payload and keeps the headers but the stream offset", () => {
    const record = toRecord(
      message(
        "storage.content.pinned",
        { cid: "bafy", at: "2026-01-02T03:04:05.000Z", list: [1, null, { a: true }] },
        {
          [Header.STREAM_OFFSET]: 12,
          [Header.REQUEST_ID]: "r1",
          [Header.KIND]: "event",
        },
      ),
    );
    expect(record).toMatchObject({
      offset: 12,
      time: new Date(1_700_000_000_000).toISOString(),
      routingKey: "storage.content.pinned",
      kind: "event",
      messageId: "m1",
      requestId: "r1",
      contentType: "application/json",
      payload: { cid: "bafy", at: "2026-01-02T03:04:05.000Z", list: [1, null, { a: true }] },
    });
    expect(record.headers).toEqual({ [Header.REQUEST_ID]: "r1", [Header.KIND]: "event" });
  });

  it("keeps undecodable bodies visible instead of failing", () => {
    const raw = message("a.b", {}, {});
    raw.content = Buffer.from("{not json");
    expect(toRecord(raw).payload).toMatchObject({ $undecodable: 9 });
    // A CBOR body (what a message holding bytes once was) is shown the same way.
    const cbor = message("a.b", {}, {});
    cbor.properties.contentType = "application/cbor";
    expect(toRecord(cbor).payload).toMatchObject({ $undecodable: 2 });
  });

  it("treats messages without a kind header as events", () => {
    expect(kindOf({})).toBe("event");
    expect(kindOf({ [Header.KIND]: "rpc-reply" })).toBe("rpc-reply");
    expect(kindOf({ [Header.KIND]: "bogus" })).toBe("event");
  });

  it("filters by routing key, kind and time", () => {
    const record = {
      routingKey: "users.user.deleted",
      kind: "event" as const,
      time: "2026-01-01T00:00:10.000Z",
    };
    expect(matchesFilter(record, {})).toBe(true);
    expect(matchesFilter(record, { key: "users.#" })).toBe(true);
    expect(matchesFilter(record, { key: "projects.#" })).toBe(false);
    expect(matchesFilter(record, { kind: "rpc-request" })).toBe(false);
    expect(matchesFilter(record, { notBefore: new Date("2026-01-01T00:00:10.500Z") })).toBe(true);
    expect(matchesFilter(record, { notBefore: new Date("2026-01-01T00:00:11Z") })).toBe(false);
  });

  it("re-publishes events to the events exchange, anything to an explicit queue, RPC nowhere else", () => {
    expect(republishTarget({ kind: "event", routingKey: "a.b" }, undefined)).toEqual({
      exchange: "events",
      routingKey: "a.b",
    });
    expect(republishTarget({ kind: "rpc-request", routingKey: "users.user.get" }, "q")).toEqual({
      exchange: "",
      routingKey: "q",
    });
    expect(republishTarget({ kind: "rpc-reply", routingKey: "users.user.get" }, undefined)).toHaveProperty(
      "skip",
    );
  });
});

describe("replay CLI arguments", () => {
  it("parses every option, ignoring the -- pnpm forwards", () => {
    const options = parseCli([
      "--",
      "--url",
      "amqp://u:p@h:1/v",
      "--from",
      "offset",
      "17",
      "--key",
      "users.#",
      "--type",
      "event",
      "--limit",
      "3",
      "--republish",
      "--to-queue",
      "notifications.users.user.deleted",
      "--dry-run",
    ]);
    expect(options).toMatchObject({
      url: "amqp://u:p@h:1/v",
      from: { offset: 17 },
      key: "users.#",
      kind: "event",
      limit: 3,
      republish: true,
      toQueue: "notifications.users.user.deleted",
      dryRun: true,
      follow: false,
      print: false,
    });
  });

  it("defaults to printing everything from the first message", () => {
    const options = parseCli([]);
    expect(options.from).toBe("first");
    expect(options.print).toBe(true);
    expect(options.republish).toBe(false);
  });

  it("refuses contradictory or malformed options", () => {
    expect(() => parseCli(["--type", "command"])).toThrow(/--type/);
    expect(() => parseCli(["--limit", "0"])).toThrow(/--limit/);
    expect(() => parseCli(["--to-queue", "q"])).toThrow(/--republish/);
    expect(() => parseCli(["--dry-run"])).toThrow(/--republish/);
    expect(() => parseCli(["--from", "soon"])).toThrow(/--from/);
    expect(() => parseCli(["--bogus"])).toThrow();
  });
});
