import type { ChannelModel } from "amqplib";
import { entriesOf, type JournalEntry, type JournalMessage, mayConcern } from "../format.ts";
import { firstAtOf, JUMP_MS, offsetNear } from "../read/bisect.ts";
import { type Position, positionText, streamStart } from "../read/positions.ts";
import { readStream } from "../read/reader.ts";
import { SKEW_MS } from "../read/select.ts";

export type Found = Array<{ entry: JournalEntry; position: string }>;

export interface Collect {
  queue: string;
  start: Position;
  /** The last offset to read; undefined: the stream is empty. */
  end: number | undefined;
  /** The first batch that starts after this (ms) ends the read. */
  stopAt?: number | undefined;
  id: string;
  field: "requestId" | "traceId";
}

/**
 * The entries of `id` in one stream's range. Only batches whose `x-ids` list the id are decoded; the
 * others cost a header check. A read that starts by time first looks at where the seek lands: far before
 * its window (chunks younger than their entries), it jumps to the window (bisect.ts) and reads with a
 * prefetch sized to it, since what is prefetched past the window's end is read for nothing.
 */
export async function collect(connection: ChannelModel, plan: Collect): Promise<Found> {
  const found: Found = [];
  if (plan.end === undefined) return found;
  const start = await startOf(connection, plan, plan.end);
  if (start === undefined) return found;
  const ids = [plan.id];
  const onMessage = (message: JournalMessage, offset: number): boolean => {
    if (plan.stopAt !== undefined) {
      const firstAt = firstAtOf(message);
      if (firstAt !== undefined && firstAt > plan.stopAt) return false;
    }
    if (!mayConcern(message, ids)) return true;
    let entries: JournalEntry[];
    try {
      entries = entriesOf(message);
    } catch {
      return true; // an undecodable batch is no part of any story that can be told
    }
    entries.forEach((entry, index) => {
      if (entry[plan.field] === plan.id) found.push({ entry, position: positionText(offset, index) });
    });
    return true;
  };
  await readStream(connection, {
    queue: plan.queue,
    start: streamStart(start.position),
    end: plan.end,
    ...(start.prefetch ? { prefetch: start.prefetch } : {}),
    onMessage,
  });
  return found;
}

/** Where to read from, and how many messages to ask for at once; undefined: nothing after the seek. */
async function startOf(
  connection: ChannelModel,
  plan: Collect,
  end: number,
): Promise<{ position: Position; prefetch?: number } | undefined> {
  const windowStart = typeof plan.start === "object" && "at" in plan.start ? plan.start.at : undefined;
  if (windowStart === undefined) return { position: plan.start };
  const first = await peek(connection, plan.queue, plan.start, end);
  if (!first) return undefined;
  if (first.at === undefined || first.at >= windowStart - JUMP_MS)
    return { position: { offset: first.offset } };
  // Batches are in time order only within writers' flush delays and clock skew: a margin more.
  const low = { offset: first.offset, at: first.at };
  const near = await offsetNear(connection, plan.queue, windowStart - SKEW_MS, { low, last: end });
  const span = plan.stopAt === undefined ? undefined : plan.stopAt - windowStart + SKEW_MS;
  if (near.perMs === undefined || span === undefined) return { position: { offset: near.offset } };
  const expected = Math.ceil(near.perMs * span * 1.5) + 100;
  return { position: { offset: near.offset }, prefetch: Math.min(1000, expected) };
}

/** The first message a read from `start` gets (one message in flight, so looking costs one). */
async function peek(connection: ChannelModel, queue: string, start: Position, end: number) {
  let first: { offset: number; at: number | undefined } | undefined;
  await readStream(connection, {
    queue,
    start: streamStart(start),
    end,
    prefetch: 1,
    onMessage: (message, offset) => {
      first = { offset, at: firstAtOf(message) };
      return false;
    },
  });
  return first;
}
