import { Header, numberHeader } from "@fundraise/bus";
import type { ChannelModel, ConsumeMessage } from "amqplib";

/** How long the last chunk's messages may take to arrive one after the other. */
const QUIET_MS = 50;
/** A stream that delivers nothing from `first` within this is empty (a busy broker may take a while). */
const EMPTY_MS = 1000;
/** Past this, whatever else arrives was published after the call. */
const MAX_MS = 1500;

export interface StreamBounds {
  /** The offset of the stream's first message still kept; undefined when it is empty. */
  first: number | undefined;
  /** The offset of its last message as of the call; undefined when it is empty. */
  last: number | undefined;
}

/**
 * A stream's first and last offsets as of the call. AMQP 0-9-1 has no query for them (a stream's
 * `messageCount` is 0): a consumer from `last` is handed the stream's last chunk, whose messages arrive
 * together; the highest offset among them is the end. What follows them quickly may be newer chunks: a
 * journal batch stamped after the call ends the burst, and a pause of 50 ms or 1.5 s in all.
 */
export async function streamBounds(connection: ChannelModel, queue: string): Promise<StreamBounds> {
  const [first] = await offsetsFrom(connection, queue, "first", true);
  if (first === undefined) return { first: undefined, last: undefined };
  const offsets = await offsetsFrom(connection, queue, "last", false);
  const last = offsets.length === 0 ? first : Math.max(...offsets);
  return { first, last: Math.max(first, last) };
}

/** The offsets a consumer from `from` receives in its first burst (only the first one with `one`). */
async function offsetsFrom(
  connection: ChannelModel,
  queue: string,
  from: "first" | "last",
  one: boolean,
): Promise<number[]> {
  const channel = await connection.createChannel();
  channel.on("error", () => undefined);
  const offsets: number[] = [];
  const called = Date.now();
  try {
    await channel.prefetch(one ? 1 : 1000);
    await new Promise<void>((resolve, reject) => {
      let quiet: NodeJS.Timeout | undefined;
      const started = Date.now();
      const empty = setTimeout(resolve, EMPTY_MS);
      const cap = setTimeout(resolve, MAX_MS);
      const done = () => {
        clearTimeout(quiet);
        clearTimeout(empty);
        clearTimeout(cap);
        resolve();
      };
      channel
        .consume(
          queue,
          (message: ConsumeMessage | null) => {
            if (!message) return done();
            // A journal batch written after the call (by its writer's clock) is past the end.
            const written = numberHeader(message.properties.headers, "x-first-at");
            if (!one && written !== undefined && written > called) return done();
            const offset = numberHeader(message.properties.headers, Header.STREAM_OFFSET);
            if (offset !== undefined) offsets.push(offset);
            clearTimeout(empty);
            if (one || Date.now() - started > MAX_MS) return done();
            clearTimeout(quiet);
            quiet = setTimeout(done, QUIET_MS);
          },
          { noAck: false, arguments: { "x-stream-offset": from } },
        )
        .catch((error: unknown) => {
          done();
          reject(error);
        });
    });
  } finally {
    await channel.close().catch(() => undefined);
  }
  return offsets;
}
