import { describe, expect, it } from "vitest";
import { BadOptionError, parsePosition } from "../src/index.ts";
import { checkOrder, describePosition, streamStart } from "../src/read/positions.ts";

const NOW = Date.UTC(2026, 10, 27, 12, 0, 0, 0);
const from = (text: string) => parsePosition(text, { option: "--from", now: NOW });
const until = (text: string) => parsePosition(text, { option: "--until", now: NOW });
const problem = (parse: () => unknown): string => {
  try {
    parse();
  } catch (error) {
    expect(error).toBeInstanceOf(BadOptionError);
    return (error as Error).message;
  }
  throw new Error("expected a BadOptionError");
};

describe("parsePosition", () => {
  it("takes the stream's ends, offsets and entries of batches", () => {
    expect(from("first")).toBe("first");
    expect(from("last")).toBe("last");
    expect(until("first")).toBe("first");
    expect(from("42")).toEqual({ offset: 42 });
    expect(from("offset:42")).toEqual({ offset: 42 });
    expect(from("offset:1795765180")).toEqual({ offset: 1_795_765_180 });
    expect(from("42:3")).toEqual({ offset: 42, index: 3 });
    expect(from("offset:42:0")).toEqual({ offset: 42, index: 0 });
  });

  it("takes times with a zone and milliseconds, dates, epoch ms and relative times", () => {
    expect(from("2026-11-27T10:00:00.123Z")).toEqual({ at: Date.UTC(2026, 10, 27, 10, 0, 0, 123) });
    expect(from("2026-11-27T10:00:00.5Z")).toEqual({ at: Date.UTC(2026, 10, 27, 10, 0, 0, 500) });
    expect(from("2026-11-27T10:00Z")).toEqual({ at: Date.UTC(2026, 10, 27, 10, 0) });
    expect(from("2026-11-27T12:00:00+02:00")).toEqual({ at: Date.UTC(2026, 10, 27, 10, 0) });
    expect(from("2026-11-27T05:30:00-04:30")).toEqual({ at: Date.UTC(2026, 10, 27, 10, 0) });
    expect(from("2026-11-27")).toEqual({ at: Date.UTC(2026, 10, 27) });
    expect(from("2024-02-29")).toEqual({ at: Date.UTC(2024, 1, 29) });
    expect(from("@1795765180000")).toEqual({ at: 1_795_765_180_000 });
    expect(from("-10m")).toEqual({ at: NOW - 600_000 });
    expect(from("-2h")).toEqual({ at: NOW - 7_200_000 });
    expect(from("-30s")).toEqual({ at: NOW - 30_000 });
    expect(from("-500ms")).toEqual({ at: NOW - 500 });
    expect(from("-1d")).toEqual({ at: NOW - 86_400_000 });
    expect(until("2030-01-01T00:00:00Z")).toEqual({ at: Date.UTC(2030, 0, 1) });
  });

  it("says an epoch-seconds number is not an offset, and what to write instead", () => {
    const line = problem(() => from("1795765180"));
    expect(line).toContain("epoch seconds");
    expect(line).toContain("@1795765180000");
    expect(line).toContain("offset:1795765180");
    expect(line).toContain("2026-11-27T");
  });

  it.each([
    ["2026-02-30T00:00:00Z", "2026-02 has 28 days, not 30"],
    ["2025-02-29", "2025-02 has 28 days, not 29"],
    ["2026-13-01", "there is no month 13"],
    ["2026-00-10", "there is no month 0"],
    ["2026-04-31T10:00:00Z", "2026-04 has 30 days, not 31"],
    ["2026-11-27T24:00:00Z", "hour 24 is out of range"],
    ["2026-11-27T10:60:00Z", "minute 60 is out of range"],
    ["2026-11-27T10:00:60Z", "second 60 is out of range"],
    ["2026-11-27T10:00:00", "has no time zone"],
    ["2026-11-27T10:00:00.1234Z", "more than milliseconds"],
    ["2026-11-27T10:00:00+15:00", "time zone +15:00 is out of range"],
    ["yesterday", "expected first, last"],
    ["-10x", "expected first, last"],
    ["", "expected first, last"],
  ])("refuses %j: %s", (text, expected) => {
    const line = problem(() => from(text));
    expect(line).toContain(expected);
    expect(line.startsWith(`--from ${JSON.stringify(text)}: `)).toBe(true);
    expect(line).not.toContain("\n");
  });

  it("refuses a --from in the future and --until last", () => {
    expect(problem(() => from("2026-11-27T12:00:01Z"))).toContain(
      "is in the future (now is 2026-11-27T12:00:00.000Z)",
    );
    expect(problem(() => from(`@${NOW + 1}`))).toContain("in the future");
    expect(problem(() => until("last"))).toContain("--until");
  });
});

describe("checkOrder", () => {
  it("refuses --until before --from when both are times or both offsets", () => {
    expect(() => checkOrder(from("-1h"), from("-2h"))).toThrow(/--until .* is before --from/);
    expect(() => checkOrder({ offset: 10 }, { offset: 9 })).toThrow(
      /--until offset:9 is before --from offset:10/,
    );
    expect(() => checkOrder({ offset: 10, index: 3 }, { offset: 10, index: 2 })).toThrow(/before/);
    expect(() => checkOrder({ offset: 10, index: 3 }, { offset: 10 })).not.toThrow();
    expect(() => checkOrder({ offset: 10 }, { at: 1 })).not.toThrow();
    expect(() => checkOrder("first", { offset: 0 })).not.toThrow();
  });
});

describe("streamStart", () => {
  it("seeks times a second early, in whole seconds; offsets exactly", () => {
    expect(streamStart({ at: Date.UTC(2026, 0, 2, 3, 4, 5, 900) })).toEqual({
      "!": "timestamp",
      value: Date.UTC(2026, 0, 2, 3, 4, 4) / 1000,
    });
    expect(streamStart({ offset: 3, index: 2 })).toBe(3);
    expect(streamStart("first")).toBe("first");
    expect(describePosition({ offset: 3, index: 2 })).toBe("3:2");
  });
});
