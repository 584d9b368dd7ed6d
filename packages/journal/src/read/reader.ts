import { Header, numberHeader } from "@fundraise/bus";
import type { Channel, ChannelModel, ConsumeMessage } from "amqplib";
import type { JournalMessage } from "../format.ts";

export type StreamStart = string | number | { "!": "timestamp"; value: number };

/** What a handler says about the read: false ends it. Sync answers keep the hot path free of promises. */
type Verdict = boolean | undefined;

export interface StreamReadOptions {
  queue: string;
  /** The `x-stream-offset` argument. */
  start: StreamStart;
  /** The last offset to read, the stream's end as of the call; undefined reads on until stopped (follow). */
  end: number | undefined;
  /** Messages in flight: the stream sends this many before it waits for acknowledgements. */
  prefetch?: number;
  signal?: AbortSignal;
  onMessage(message: JournalMessage, offset: number): Verdict | Promise<Verdict>;
}

/** Acknowledgements only return credit to a stream consumer: one for many messages saves frames. */
const ACK_EVERY = 100;
/** A seek by time past the stream's end waits for new messages; checked after this (below). */
const SEEK_CHECK_MS = 300;
const PROBE_MS = 2000;

/**
 * Reads a stream in order from `start` to `end` (inclusive) on a channel of its own, and cancels its
 * consumer as soon as the handler says so or a message past `end` arrives. Resolves when it ended; rejects
 * with the channel's error (a missing queue: 404).
 */
export async function readStream(connection: ChannelModel, options: StreamReadOptions): Promise<number> {
  // "next" is what comes after the call: nothing, for a read that ends at the end as of the call.
  if (options.start === "next" && options.end !== undefined) return 0;
  const channel = await connection.createChannel();
  let failure: Error | undefined;
  channel.on("error", (error: Error) => {
    failure ??= error;
  });
  let delivered = 0;
  try {
    await channel.prefetch(options.prefetch ?? 1000);
    delivered = await consume(connection, channel, options);
  } finally {
    await channel.close().catch(() => undefined);
  }
  if (failure) throw failure;
  return delivered;
}

function consume(connection: ChannelModel, channel: Channel, options: StreamReadOptions): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const backlog: ConsumeMessage[] = [];
    let head = 0;
    let paused = false;
    let done = false;
    let delivered = 0;
    let unacked = 0;
    let consumerTag: string | undefined;
    let check: NodeJS.Timeout | undefined;
    // Credit comes back only with acknowledgements: a small prefetch needs them sooner.
    const ackEvery = Math.max(1, Math.min(ACK_EVERY, Math.floor((options.prefetch ?? 1000) / 2)));

    const finish = (error?: unknown) => {
      if (done) return;
      done = true;
      clearTimeout(check);
      options.signal?.removeEventListener("abort", onAbort);
      const cancelled = consumerTag ? channel.cancel(consumerTag).then(() => undefined) : Promise.resolve();
      void cancelled
        .catch(() => undefined)
        .then(() => (error === undefined ? resolve(delivered) : reject(error)));
    };
    const onAbort = () => finish();

    const settle = (message: ConsumeMessage, offset: number, verdict: Verdict) => {
      unacked += 1;
      if (unacked >= ackEvery) {
        unacked = 0;
        try {
          channel.ack(message, true);
        } catch {
          // The channel is closing: nothing left to give credit for.
        }
      }
      // The message at `end` is the last one to read: waiting for the next could mean waiting for ever.
      if (verdict === false || (options.end !== undefined && offset >= options.end)) finish();
    };

    const drain = () => {
      while (head < backlog.length && !done && !paused) {
        const message = backlog[head++]!;
        const offset = numberHeader(message.properties.headers, Header.STREAM_OFFSET) ?? -1;
        if (options.end !== undefined && offset > options.end) return finish();
        let verdict: Verdict | Promise<Verdict>;
        try {
          verdict = options.onMessage(message, offset);
        } catch (error) {
          return finish(error);
        }
        if (verdict instanceof Promise) {
          paused = true;
          verdict.then(
            (answer) => {
              paused = false;
              settle(message, offset, answer);
              drain();
            },
            (error: unknown) => finish(error),
          );
          return;
        }
        settle(message, offset, verdict);
      }
      if (head === backlog.length) {
        backlog.length = 0;
        head = 0;
      }
    };

    // A seek by time lands past the end when every message is older: the consumer then waits for new
    // ones, which a quiet journal may never write. Once the message at `end` is seen to arrive on another
    // channel, and a round trip on this one brought nothing either, there is nothing to read.
    const checkSeek = async () => {
      if (done || delivered > 0 || options.end === undefined) return;
      await probe(connection, options.queue, options.end);
      await channel.checkQueue(options.queue).catch(() => undefined);
      if (delivered === 0) finish();
    };

    if (options.signal?.aborted) return finish();
    options.signal?.addEventListener("abort", onAbort);
    channel.on("close", () => finish(done ? undefined : new Error("the journal channel closed")));
    channel
      .consume(
        options.queue,
        (message) => {
          if (!message) return finish(new Error("the broker cancelled the read"));
          if (done) return;
          delivered += 1;
          backlog.push(message);
          drain();
        },
        { noAck: false, arguments: { "x-stream-offset": options.start } },
      )
      .then(
        (ok) => {
          consumerTag = ok.consumerTag;
          if (done) {
            void channel.cancel(ok.consumerTag).catch(() => undefined);
            return;
          }
          if (typeof options.start === "object" && options.end !== undefined) {
            check = setTimeout(() => void checkSeek().catch(finish), SEEK_CHECK_MS);
          }
        },
        (error: unknown) => finish(error),
      );
  });
}

/** Waits until the message at `offset` is delivered to a consumer of its own (or PROBE_MS passed). */
async function probe(connection: ChannelModel, queue: string, offset: number): Promise<void> {
  const channel = await connection.createChannel();
  channel.on("error", () => undefined);
  try {
    await channel.prefetch(1);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, PROBE_MS);
      channel
        .consume(
          queue,
          () => {
            clearTimeout(timer);
            resolve();
          },
          { noAck: false, arguments: { "x-stream-offset": offset } },
        )
        .catch(() => resolve());
    });
  } finally {
    await channel.close().catch(() => undefined);
  }
}
