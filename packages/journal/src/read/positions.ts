import { BadOptionError } from "./errors.ts";

/**
 * Where a read starts or ends. A stream offset names a batch of entries; `index` names an entry inside it
 * (a record's `position` is `<offset>:<index>`). Times are ms, compared with each entry's `at`.
 */
export type Position = "first" | "last" | "next" | { offset: number; index?: number } | { at: number };

export interface ParseContext {
  /** The option being parsed, named in every error. */
  option?: "--from" | "--until";
  /** What relative times count back from, and what `--from` may not be after. */
  now?: number;
}

/** A bare number from here up is a time in epoch seconds typed by mistake, not an offset anybody has. */
const EPOCH_SECONDS = 1_000_000_000;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?([Zz]|[+-]\d{2}:\d{2})?$/;
export const POSITION_FORMS =
  "first, last, offset:<n>, <offset>:<index>, an ISO time with a zone (2026-11-27T10:00:00.123Z), a date (2026-11-27), @<epoch ms> or a relative time (-10m, -2h, -30s, -500ms, -1d)";

/** Parses one `--from` / `--until` value; a bad one is a BadOptionError naming the problem. */
export function parsePosition(value: string, context: ParseContext = {}): Position {
  const option = context.option ?? "--from";
  const now = context.now ?? Date.now();
  const text = value.trim();
  const fail = (problem: string): never => {
    throw new BadOptionError(`${option} ${JSON.stringify(value)}: ${problem}`);
  };
  const position = parseText(text, now, fail);
  if (position === undefined) return fail(`expected ${POSITION_FORMS}`);
  if (option === "--until" && (position === "last" || position === "next")) {
    fail("a read ends at the stream's end as of the call anyway: leave --until out");
  }
  if (option === "--from" && typeof position === "object" && "at" in position && position.at > now) {
    fail(`is in the future (now is ${isoMs(now)})`);
  }
  return position;
}

function parseText(text: string, now: number, fail: (problem: string) => never): Position | undefined {
  if (text === "first" || text === "last" || text === "next") return text;
  let match = /^(?:offset:)?(\d+):(\d+)$/.exec(text);
  if (match) return { offset: Number(match[1]), index: Number(match[2]) };
  match = /^offset:(\d+)$/.exec(text);
  if (match) return { offset: Number(match[1]) };
  if (/^\d+$/.test(text)) {
    const n = Number(text);
    if (n >= EPOCH_SECONDS) {
      fail(
        `looks like a time in epoch seconds, not an offset: write @${n * 1000} (epoch ms), ${isoMs(n * 1000)} or, for an offset, offset:${n}`,
      );
    }
    return { offset: n };
  }
  match = /^@(\d+)$/.exec(text);
  if (match) {
    const at = Number(match[1]);
    if (at > 8.64e15) fail("is beyond any date");
    return { at };
  }
  match = /^-(\d+)(ms|s|m|h|d)$/.exec(text);
  if (match) return { at: now - Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS] };
  match = DATE.exec(text);
  if (match) return { at: checkedTime(fields(match, 1, 3), fail) };
  match = DATE_TIME.exec(text);
  if (match) {
    const zone = match[8];
    if (zone === undefined) fail("has no time zone: add Z (UTC) or an offset such as +02:00");
    const fraction = match[7] ?? "";
    if (fraction.length > 3) fail("has more than milliseconds (at most 3 digits after the second)");
    const ms = Number(fraction.padEnd(3, "0"));
    return { at: checkedTime([...fields(match, 1, 6), ms], fail) - zoneMs(zone!, fail) };
  }
  return undefined;
}

/** The numbers in groups `from..to` of a match; absent groups (optional seconds) are 0. */
function fields(match: RegExpExecArray, from: number, to: number): number[] {
  const out: number[] = [];
  for (let i = from; i <= to; i++) out.push(Number(match[i] ?? 0));
  return out;
}

/** UTC ms of validated fields: every field in range, so no Date rollover turns Feb 30 into Mar 2. */
function checkedTime(parts: number[], fail: (problem: string) => never): number {
  const [year = 0, month = 1, day = 1, hour = 0, minute = 0, second = 0, ms = 0] = parts;
  if (month < 1 || month > 12) fail(`there is no month ${month}`);
  const days = daysIn(year, month);
  if (day < 1 || day > days) fail(`${year}-${pad(month)} has ${days} days, not ${day}`);
  if (hour > 23) fail(`hour ${hour} is out of range (00 to 23)`);
  if (minute > 59) fail(`minute ${minute} is out of range (00 to 59)`);
  if (second > 59) fail(`second ${second} is out of range (00 to 59)`);
  return Date.UTC(year, month - 1, day, hour, minute, second, ms);
}

function zoneMs(zone: string, fail: (problem: string) => never): number {
  if (zone === "Z" || zone === "z") return 0;
  const hours = Number(zone.slice(1, 3));
  const minutes = Number(zone.slice(4, 6));
  if (hours > 14 || minutes > 59) fail(`time zone ${zone} is out of range (-14:00 to +14:00)`);
  return (zone[0] === "-" ? -1 : 1) * (hours * 60 + minutes) * 60_000;
}

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

const pad = (n: number) => String(n).padStart(2, "0");

/** A time as ISO 8601 with milliseconds, in UTC. */
export function isoMs(ms: number): string {
  return new Date(ms).toISOString();
}

/** `<offset>:<index>`, the position of one entry. */
export function positionText(offset: number, index: number): string {
  return `${offset}:${index}`;
}

/** A position as a person wrote it, for messages. */
export function describePosition(position: Position): string {
  if (typeof position === "string") return position;
  if ("at" in position) return isoMs(position.at);
  return position.index === undefined ? `offset:${position.offset}` : `${position.offset}:${position.index}`;
}

/** Refuses a `--until` before `--from` when both are known without reading (two times, two offsets). */
export function checkOrder(from: Position | undefined, until: Position | undefined): void {
  if (from === undefined || until === undefined) return;
  if (typeof from !== "object" || typeof until !== "object") return;
  const before =
    "at" in from && "at" in until
      ? until.at < from.at
      : "offset" in from && "offset" in until
        ? until.offset < from.offset ||
          (until.offset === from.offset && (until.index ?? Number.POSITIVE_INFINITY) < (from.index ?? 0))
        : false;
  if (before) {
    throw new BadOptionError(`--until ${describePosition(until)} is before --from ${describePosition(from)}`);
  }
}

/** The `x-stream-offset` argument that starts a read at `position` (times a second early: chunks seek coarsely). */
export function streamStart(position: Position): string | number | { "!": "timestamp"; value: number } {
  if (typeof position === "string") return position;
  if ("offset" in position) return position.offset;
  return { "!": "timestamp", value: Math.floor(position.at / 1000) - 1 };
}
