import { REQUEST_ID_PATTERN, timeOfId } from "@fundraise/bus";
import type { ChannelModel } from "amqplib";
import type { JournalEntry } from "../format.ts";
import { boundsOf, checkPositions, connectJournal, requireJournal } from "../read/connect.ts";
import { BadOptionError, ReplayError } from "../read/errors.ts";
import { describePosition, isoMs, type Position, parsePosition } from "../read/positions.ts";
import { SKEW_MS } from "../read/select.ts";
import { streamBounds } from "../stream-end.ts";
import { JOURNAL_QUEUE, LATE_QUEUE } from "../topology.ts";
import { collect, type Found } from "./collect.ts";
import { buildStory, type Story } from "./tree.ts";

export interface FindStoryOptions {
  /** The broker and vhost; or `connection`, kept open (benches, tests). */
  url?: string;
  connection?: ChannelModel;
  requestId?: string;
  /** A W3C trace id, 32 hex digits. */
  traceId?: string;
  /** Each replaces its side of the window the id's time gives (the range to read for an id without one). */
  from?: Position | string;
  until?: Position | string;
  /** The writers' `lateAfterMs` (default 2000): how long after t0 an entry is only in the main stream. */
  lateAfterMs?: number;
  /** One-line notes for the operator (the CLI writes them on stderr). */
  onNotice?: (line: string) => void;
}

export interface StoryWindow {
  /** When the id says its request started (ms); undefined for an id that carries no time. */
  t0: number | undefined;
  /** The span looked in (ms): undefined `from` is the journal's start; `until` is the end as of the call. */
  from: number | undefined;
  until: number;
}

export interface FoundStory {
  /** The story's entries, each once, main-stream copies first. */
  entries: JournalEntry[];
  /** Entry id → where it was found: `<offset>:<index>`, or `late:<offset>:<index>`. */
  positions: Map<string, string>;
  tree: Story;
  window: StoryWindow;
}

/** A request id as the gateway takes one from a client (`x-request-id`), or one of ours. */
export const REQUEST_ID = REQUEST_ID_PATTERN;
export const TRACE_ID = /^[0-9a-f]{32}$/i;

/**
 * Finds the entries of one request (or trace) without scanning the journal: its id's time t0 gives the
 * window [t0 - 2 s, t0 + lateAfterMs + 2 s] of the main stream, read from a seek by time and stopped at the
 * first batch past it; batches whose `x-ids` do not list the id are skipped undecoded. Entries written
 * later are in the late stream, read from t0 to its end as of the call. An id without a time means
 * reading the given range, or the whole journal.
 */
export async function findStory(options: FindStoryOptions): Promise<FoundStory> {
  const { id, field, kind } = storyIdOf(options);
  const t0 = timeOfId(id, kind === "trace" ? "trace" : "request");
  const from = typeof options.from === "string" ? parsePosition(options.from) : options.from;
  const until =
    typeof options.until === "string" ? parsePosition(options.until, { option: "--until" }) : options.until;
  const connection = options.connection ?? (await connectJournal(requireUrl(options.url)));
  try {
    await requireJournal(connection);
    const called = Date.now();
    if (t0 === undefined) {
      const range = from !== undefined || until !== undefined ? "the range given" : "the whole journal";
      options.onNotice?.(`${kind} id ${id} carries no time: reading ${range} for it`);
    }
    const { start, stopAt } = mainRange(t0, from, until, options.lateAfterMs ?? 2000);
    // The two streams are read side by side: the late one's bounds take longest when it is empty.
    const inMain = (async () => {
      const bounds = await streamBounds(connection, JOURNAL_QUEUE);
      await checkPositions(connection, bounds, from, until);
      const end = endOffset(bounds.last, until);
      return collect(connection, { queue: JOURNAL_QUEUE, start, end, stopAt, id, field });
    })();
    const inLate = (async (): Promise<Found> => {
      if (t0 === undefined) return [];
      const bounds = await boundsOf(connection, LATE_QUEUE);
      const plan = { queue: LATE_QUEUE, start: { at: t0 - SKEW_MS }, end: bounds.last, id, field };
      return collect(connection, plan);
    })();
    const [main, late] = await Promise.all([inMain, inLate]);
    const window: StoryWindow = { t0, from: timeOf(start), until: called };
    const { entries, positions } = merge(main, late);
    if (entries.length === 0) {
      throw new ReplayError(
        `no journal entry of ${kind} ${id} between ${since(start)} and ${since(until ?? called)}`,
      );
    }
    return { entries, positions, tree: buildStory(entries, id), window };
  } finally {
    if (!options.connection) await connection.close().catch(() => undefined);
  }
}

/** Each entry once (format-1 events may be in the journal twice), main-stream copies first. */
function merge(main: Found, late: Found): { entries: JournalEntry[]; positions: Map<string, string> } {
  const positions = new Map<string, string>();
  const entries: JournalEntry[] = [];
  for (const [found, prefix] of [
    [main, ""],
    [late, "late:"],
  ] as const) {
    for (const { entry, position } of found) {
      if (positions.has(entry.id)) continue;
      positions.set(entry.id, prefix + position);
      entries.push(entry);
    }
  }
  return { entries, positions };
}

/**
 * The main stream's range: the window of the id's time, each side replaced by `--from` / `--until` when
 * given (a clock skew larger than the margins); without a time, the range given or the whole journal.
 */
function mainRange(
  t0: number | undefined,
  from: Position | undefined,
  until: Position | undefined,
  lateAfterMs: number,
) {
  const start: Position = from ?? (t0 === undefined ? "first" : { at: t0 - SKEW_MS });
  const untilAt = timeOf(until);
  let stopAt: number | undefined;
  if (untilAt !== undefined) stopAt = untilAt + SKEW_MS;
  else if (until === undefined && t0 !== undefined) stopAt = t0 + lateAfterMs + SKEW_MS;
  return { start, stopAt };
}

function since(position: Position | number): string {
  if (position === "first") return "the journal's start";
  return typeof position === "number" ? isoMs(position) : describePosition(position);
}

function storyIdOf(options: FindStoryOptions) {
  if ((options.requestId === undefined) === (options.traceId === undefined)) {
    throw new BadOptionError("a story needs --request <id> or --trace <id>, one of them");
  }
  if (options.traceId !== undefined) {
    if (!TRACE_ID.test(options.traceId)) {
      throw new BadOptionError(`--trace ${JSON.stringify(options.traceId)}: a trace id is 32 hex digits`);
    }
    return { id: options.traceId.toLowerCase(), field: "traceId" as const, kind: "trace" as const };
  }
  const id = options.requestId!;
  if (!REQUEST_ID.test(id)) {
    throw new BadOptionError(
      `--request ${JSON.stringify(id)}: a request id is 1 to 128 letters, digits, "_", ".", ":" or "-"`,
    );
  }
  return { id, field: "requestId" as const, kind: "request" as const };
}

function requireUrl(url: string | undefined): string {
  if (url === undefined) throw new BadOptionError("findStory needs a url or a connection");
  return url;
}

function timeOf(position: Position | undefined): number | undefined {
  return typeof position === "object" && "at" in position ? position.at : undefined;
}

/** The last offset to read: the stream's end as of the call, or `--until`'s batch. */
function endOffset(last: number | undefined, until: Position | undefined): number | undefined {
  if (last === undefined) return undefined;
  return typeof until === "object" && "offset" in until ? Math.min(last, until.offset) : last;
}
