import type { JournalKind } from "@fundraise/bus";
import type { ChannelModel } from "amqplib";
import { entriesOf, type JournalMessage } from "./format.ts";
import { checkPositions, connectJournal, queueExists, requireJournal } from "./read/connect.ts";
import { BadOptionError } from "./read/errors.ts";
import { checkOrder, type Position, positionText, streamStart } from "./read/positions.ts";
import { readStream } from "./read/reader.ts";
import { Selection } from "./read/select.ts";
import { type JournalRecord, recordOf } from "./records.ts";
import { decide, Republisher } from "./republish.ts";
import { streamBounds } from "./stream-end.ts";
import { JOURNAL_QUEUE } from "./topology.ts";

export interface ReplayOptions {
  url: string;
  /** Where to start (default: the first entry kept). */
  from?: Position;
  /** The last time or position to read; without `follow` a read also ends at the stream's end as of the call. */
  until?: Position;
  /** Routing-key pattern, topic syntax (`*` one word, `#` zero or more), matched against entry names. */
  key?: string;
  kind?: JournalKind;
  /** Stop after this many matching entries. */
  limit?: number;
  /** Keep reading what is written after the call, until `until`, `limit` or `signal`. */
  follow?: boolean;
  /** @deprecated A read ends at the stream's end as of the call; ignored. */
  idleMs?: number;
  /** Re-publish matches that may be sent again (republish.ts `decide`). */
  republish?: boolean;
  /** With republish: RPC requests too (reads only, unless `allowWrites`). */
  includeRpc?: boolean;
  allowWrites?: boolean;
  /** With republish: to this queue (it must exist) instead of each message's exchange. */
  toQueue?: string;
  /** With republish: say where each match would go, publish nothing. */
  dryRun?: boolean;
  /** Re-published messages get new message ids, so idempotent consumers process them again. */
  freshIds?: boolean;
  /** Also re-publish entries that are themselves replays (skipped by default: no replay loops). */
  includeReplayed?: boolean;
  /** Receives every matching entry (the CLI prints it as a JSON line). */
  onRecord?: (record: JournalRecord) => void;
  /** A batch that does not decode: reported, and the read goes on. */
  onWarning?: (line: string) => void;
  signal?: AbortSignal;
}

export interface ReplaySummary {
  /** Entries read (batches skipped by their time span undecoded are not counted). */
  read: number;
  /** Entries that passed the filters. */
  matched: number;
  republished: number;
  /** Matches not re-published, whatever the reason (refused ones included). */
  skipped: number;
  /** RPC writes (or unknown RPCs) refused without --allow-writes. */
  refused: number;
  /** Published, but returned by the broker: no queue was bound for them. */
  unroutable: number;
  lastPosition: string | undefined;
}

/**
 * Reads the journal from `from` to `until`, or to its end as of the call (`follow`: on), filters, and prints
 * and/or re-publishes. Resolves with a summary; bad positions are BadOptionErrors, a missing broker or
 * journal ReplayErrors.
 */
export async function replayJournal(options: ReplayOptions): Promise<ReplaySummary> {
  checkOrder(options.from, options.until);
  const summary: ReplaySummary = {
    read: 0,
    matched: 0,
    republished: 0,
    skipped: 0,
    refused: 0,
    unroutable: 0,
    lastPosition: undefined,
  };
  const connection = await connectJournal(options.url);
  try {
    await requireJournal(connection);
    if (
      options.republish &&
      options.toQueue !== undefined &&
      !(await queueExists(connection, options.toQueue))
    ) {
      throw new BadOptionError(`--to-queue: no queue ${options.toQueue}`);
    }
    const bounds = await streamBounds(connection, JOURNAL_QUEUE);
    await checkPositions(connection, bounds, options.from, options.until);
    if (bounds.last === undefined && !options.follow) return summary;
    let end = options.follow ? undefined : bounds.last;
    if (options.until !== undefined && typeof options.until === "object" && "offset" in options.until) {
      end = Math.min(end ?? Number.POSITIVE_INFINITY, options.until.offset);
    }
    await read(connection, options, summary, end);
    return summary;
  } finally {
    await connection.close().catch(() => undefined);
  }
}

async function read(
  connection: ChannelModel,
  options: ReplayOptions,
  summary: ReplaySummary,
  end: number | undefined,
): Promise<void> {
  const selection = new Selection(options);
  const publisher = options.republish && !options.dryRun ? await Republisher.open(connection) : undefined;
  const handle = async (message: JournalMessage, offset: number): Promise<boolean> => {
    const verdict = selection.batch(message, offset);
    if (verdict !== "read") return verdict === "skip";
    let entries: ReturnType<typeof entriesOf>;
    try {
      entries = entriesOf(message);
    } catch (error) {
      options.onWarning?.(
        `the journal message at offset ${offset} does not decode: ${(error as Error).message}`,
      );
      return true;
    }
    selection.checkIndexes(offset, entries.length);
    for (const [index, entry] of entries.entries()) {
      const choice = selection.entry(entry, offset, index);
      if (choice === "stop") return false;
      summary.read += 1;
      summary.lastPosition = positionText(offset, index);
      if (choice === "skip") continue;
      summary.matched += 1;
      const record = recordOf(entry, positionText(offset, index));
      if (options.republish) await republishOne(record, entry, options, summary, publisher);
      options.onRecord?.(record);
      if (options.limit !== undefined && summary.matched >= options.limit) return false;
    }
    return true;
  };
  try {
    await readStream(connection, {
      queue: JOURNAL_QUEUE,
      start: streamStart(options.from ?? "first"),
      end,
      ...(options.signal ? { signal: options.signal } : {}),
      onMessage: handle,
    });
  } finally {
    await publisher?.close();
  }
}

async function republishOne(
  record: JournalRecord,
  entry: Parameters<typeof decide>[0],
  options: ReplayOptions,
  summary: ReplaySummary,
  publisher: Republisher | undefined,
): Promise<void> {
  const decision = decide(entry, options);
  if ("reason" in decision) {
    record.action = decision.action;
    record.reason = decision.reason;
    summary.skipped += 1;
    if (decision.action === "refused") summary.refused += 1;
    return;
  }
  record.target = decision.target;
  if (!publisher) {
    record.action = "would-republish";
    return;
  }
  const outcome = await publisher.send(entry, record.position, decision.target, options.freshIds ?? false);
  record.action = outcome;
  if (outcome === "unroutable") {
    record.reason = "the broker returned it: no queue is bound for it";
    summary.unroutable += 1;
  } else {
    summary.republished += 1;
  }
}
