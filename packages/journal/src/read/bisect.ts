import type { Channel, ChannelModel } from "amqplib";
import { type JournalMessage, spanOf } from "../format.ts";

/**
 * A seek by time goes by the broker's chunk times. A journal whose chunks are younger than its entries
 * (loaded in bulk, restored, a bench) makes that seek land far too early: then the window's start is found
 * on the batches' own times, one message read per step, instead of reading everything before it.
 */
export const JUMP_MS = 30_000;
/** Close enough: the few batches before the target are read and skipped by their headers. */
const NEAR = 64;

/** A batch's offset and when its entries start (ms). */
export interface Mark {
  offset: number;
  at: number;
}

/** When a batch's entries start (ms): its header, or the AMQP timestamp of a format-1 message (s). */
export function firstAtOf(message: JournalMessage): number | undefined {
  const span = spanOf(message);
  if (span) return span.first;
  const timestamp = message.properties.timestamp;
  return typeof timestamp === "number" ? timestamp * 1000 : undefined;
}

/**
 * An offset at most NEAR batches before the first one that starts at or after `at`, between `low` (which
 * starts before it) and `last`. Batches are roughly in time order (the caller leaves a margin): guesses
 * interpolate on time (a steady journal takes three reads), and a guess that does not halve the range is
 * followed by a halving, so a skewed journal costs at most about twice a bisection. Also returns the
 * journal's rate (batches per ms), to size the read that follows.
 */
export async function offsetNear(
  connection: ChannelModel,
  queue: string,
  at: number,
  range: { low: Mark; last: number },
): Promise<{ offset: number; perMs: number | undefined }> {
  const channel = await connection.createChannel();
  channel.on("error", () => undefined);
  try {
    await channel.prefetch(1);
    let low = range.low;
    const lastAt = await firstAtAt(channel, queue, range.last);
    if (lastAt === undefined) return { offset: low.offset, perMs: undefined };
    let high: Mark = { offset: range.last, at: lastAt };
    if (high.at < at) return { offset: high.offset, perMs: undefined };
    const perMs = high.at > low.at ? (high.offset - low.offset) / (high.at - low.at) : undefined;
    const probe = async (offset: number): Promise<boolean> => {
      const found = await firstAtAt(channel, queue, offset);
      if (found === undefined) return false;
      if (found < at) low = { offset, at: found };
      else high = { offset, at: found };
      return true;
    };
    let halve = false;
    while (high.offset - low.offset > NEAR) {
      const width = high.offset - low.offset;
      const guess = clamp(halve ? (low.offset + high.offset) / 2 : interpolate(low, high, at), low, high);
      if (!(await probe(guess))) break;
      // Just below the target: one probe above it may close the bracket.
      if (low.offset === guess && high.offset - low.offset > NEAR) {
        if (!(await probe(Math.min(high.offset - 1, low.offset + NEAR)))) break;
      }
      // Interpolation that does not halve the range (a skewed journal): halve next time.
      halve = high.offset - low.offset > width / 2;
    }
    return { offset: low.offset, perMs };
  } finally {
    await channel.close().catch(() => undefined);
  }
}

function interpolate(low: Mark, high: Mark, at: number): number {
  if (high.at <= low.at) return (low.offset + high.offset) / 2;
  // Aim a little early: landing just before the target ends the search, just after it costs a step.
  return low.offset + ((at - low.at) / (high.at - low.at)) * (high.offset - low.offset) - NEAR / 2;
}

function clamp(guess: number, low: Mark, high: Mark): number {
  return Math.min(high.offset - 1, Math.max(low.offset + 1, Math.round(guess)));
}

/** The start time of the batch at `offset` (a numeric offset starts a stream consumer at exactly that message). */
function firstAtAt(channel: Channel, queue: string, offset: number): Promise<number | undefined> {
  return new Promise<number | undefined>((resolve, reject) => {
    let tag: string | undefined;
    let done = false;
    const finish = (value: number | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const cancelled = tag ? channel.cancel(tag).then(() => undefined) : Promise.resolve();
      void cancelled.catch(() => undefined).then(() => resolve(value));
    };
    const timer = setTimeout(() => finish(undefined), 5000);
    channel
      .consume(queue, (message) => finish(message ? firstAtOf(message) : undefined), {
        noAck: false,
        arguments: { "x-stream-offset": offset },
      })
      .then((ok) => {
        tag = ok.consumerTag;
        if (done) void channel.cancel(ok.consumerTag).catch(() => undefined);
      }, reject);
  });
}
