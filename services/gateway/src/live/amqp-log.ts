import { createWaitingLog, decodeBody, Exchanges, Header } from "@fundraise/bus";
import type { Logger } from "@fundraise/service-kit";
import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from "amqplib";
import { LIVE_EVENTS, type LiveEntry, type LiveLog, type ReadOptions } from "./log.ts";

/** The stream of the events live streams are made of, bound to the bus's `events` exchange. */
export const LIVE_QUEUE = "bus.live";

/**
 * Fixed for every process (a stream's arguments cannot change after declaration). Retention is well past
 * the 24 hours a client may resume within; the journal keeps the same events too, among every RPC copy.
 */
export const LIVE_ARGUMENTS = {
  "x-queue-type": "stream",
  "x-max-age": "7D",
  "x-max-length-bytes": 1024 ** 3,
  "x-stream-max-segment-size-bytes": 50 * 1024 ** 2,
} as const;

/** Deliveries in flight per reader; a stream consumer's acks only grant credit. */
const PREFETCH = 1000;
/** Reads from a position at once (a reconnect storm after a restart queues the rest). */
const MAX_READS = 8;
const RECONNECT_MS = [250, 500, 1000, 2000, 5000];

export async function declareLiveLog(channel: Channel): Promise<void> {
  await channel.assertExchange(Exchanges.EVENTS, "topic", { durable: true });
  await channel.assertQueue(LIVE_QUEUE, { durable: true, arguments: { ...LIVE_ARGUMENTS } });
  for (const key of LIVE_EVENTS) await channel.bindQueue(LIVE_QUEUE, Exchanges.EVENTS, key);
}

function entryOf(message: ConsumeMessage): LiveEntry | null {
  const offset = message.properties.headers?.[Header.STREAM_OFFSET];
  if (typeof offset !== "number") return null;
  let payload: unknown;
  try {
    payload = decodeBody(message.content, message.properties.contentType);
  } catch {
    payload = undefined;
  }
  return {
    offset,
    routingKey: message.fields.routingKey,
    messageId: message.properties.messageId,
    payload,
  };
}

/**
 * Consumes the stream from `offset` on `channel`, handing batches to `handle` in order: each batch is
 * what arrived while the previous one was handled. Answers the consumer's tag.
 */
async function consumeInBatches(
  channel: Channel,
  offset: number | "first" | "last" | "next",
  handle: (entries: LiveEntry[]) => Promise<void>,
  onError: (error: unknown) => void,
): Promise<string> {
  let waiting: ConsumeMessage[] = [];
  let running = false;
  const drain = async () => {
    running = true;
    try {
      while (waiting.length > 0) {
        const batch = waiting;
        waiting = [];
        await handle(batch.flatMap((m) => entryOf(m) ?? []));
        for (const m of batch) channel.ack(m);
      }
    } catch (error) {
      onError(error);
    } finally {
      running = false;
    }
  };
  await channel.prefetch(PREFETCH);
  const { consumerTag } = await channel.consume(
    LIVE_QUEUE,
    (message) => {
      if (!message) return;
      waiting.push(message);
      if (!running) void drain();
    },
    { noAck: false, arguments: { "x-stream-offset": offset } },
  );
  return consumerTag;
}

/** The live log on RabbitMQ: a stream queue (LIVE_QUEUE) read over its own connection. */
export function createAmqpLiveLog(options: { url: string; log: Logger; name?: string }): LiveLog {
  const log = options.log.child({ component: "live-log" });
  let connection: ChannelModel | undefined;
  let connecting: Promise<ChannelModel> | undefined;
  let position: number | null = null;
  let tailed = false;
  let closed = false;
  let reads = 0;
  const readQueue: Array<() => void> = [];
  let onEntries: ((entries: LiveEntry[]) => Promise<void>) | undefined;
  // While the broker is away the bus says so (one line per burst); this only says what it does not.
  const waiting = createWaitingLog({
    log,
    what: "the message broker",
    url: options.url,
    outageLevel: "debug",
  });

  async function connect(): Promise<ChannelModel> {
    const c = await amqp.connect(options.url, {
      clientProperties: { connection_name: options.name ?? "gateway-live" },
      timeout: 10_000,
    });
    // amqplib follows an 'error' with 'close', which follows the log again (below).
    c.on("error", (error: Error) => log.debug({ err: error }, "live log connection error"));
    const setup = await c.createChannel();
    await declareLiveLog(setup);
    await setup.close();
    return c;
  }

  const connectionOf = (): Promise<ChannelModel> => {
    if (connection) return Promise.resolve(connection);
    connecting ??= connect()
      .then((c) => {
        connection = c;
        return c;
      })
      .finally(() => {
        connecting = undefined;
      });
    return connecting;
  };

  /** The offset of the log's last entry now, or null when it is empty. */
  async function tail(c: ChannelModel): Promise<number | null> {
    let last: number | null = null;
    const channel = await c.createChannel();
    try {
      await new Promise<void>((resolve, reject) => {
        let timer = setTimeout(resolve, 300);
        void consumeInBatches(
          channel,
          "last",
          async (entries) => {
            for (const e of entries) last = Math.max(last ?? e.offset, e.offset);
            clearTimeout(timer);
            timer = setTimeout(resolve, 100);
          },
          reject,
        ).catch(reject);
      });
    } finally {
      await channel.close().catch(() => undefined);
    }
    return last;
  }

  async function follow(attempt = 0): Promise<void> {
    if (closed || !onEntries) return;
    const handle = onEntries;
    try {
      const c = await connectionOf();
      // The end once, at the start; after that a reconnect goes on from what was followed.
      if (!tailed) {
        position = await tail(c);
        tailed = true;
      }
      const channel = await c.createChannel();
      const from = position === null ? "first" : position + 1;
      let lost = false;
      const again = (error?: unknown) => {
        if (lost || closed) return;
        lost = true;
        if (error) log.warn({ err: error }, "live log reader lost: following again");
        connection = undefined;
        void c.close().catch(() => undefined);
        void follow(0);
      };
      channel.on("close", () => again());
      channel.on("error", (error: Error) => again(error));
      c.on("close", () => again());
      await consumeInBatches(
        channel,
        from,
        async (entries) => {
          const fresh = entries.filter((e) => position === null || e.offset > position);
          if (fresh.length === 0) return;
          position = fresh[fresh.length - 1]!.offset;
          await handle(fresh);
        },
        (error) => again(error),
      );
      waiting.connected();
      log.info({ from, queue: LIVE_QUEUE }, "following the live log");
    } catch (error) {
      connection = undefined;
      const delay = RECONNECT_MS[Math.min(attempt, RECONNECT_MS.length - 1)]!;
      waiting.failed(error);
      setTimeout(() => void follow(attempt + 1), delay).unref();
    }
  }

  async function slot(): Promise<() => void> {
    if (reads >= MAX_READS) await new Promise<void>((resolve) => readQueue.push(resolve));
    reads += 1;
    return () => {
      reads -= 1;
      readQueue.shift()?.();
    };
  }

  return {
    get position() {
      return position;
    },

    // Resolves once following (or trying again in the background when the broker is not there yet).
    async start(handler) {
      onEntries = handler;
      await follow();
    },

    async read(from, each, { signal, idleMs }: ReadOptions) {
      const release = await slot();
      let channel: Channel | undefined;
      try {
        if (signal.aborted) return;
        channel = await (await connectionOf()).createChannel();
        const reader = channel;
        await new Promise<void>((resolve, reject) => {
          let done = false;
          const stop = (error?: unknown) => {
            done = true;
            clearTimeout(timer);
            signal.removeEventListener("abort", onAbort);
            if (error) reject(error);
            else resolve();
          };
          const onAbort = () => stop();
          let timer = setTimeout(stop, idleMs);
          signal.addEventListener("abort", onAbort, { once: true });
          reader.on("close", onAbort);
          void consumeInBatches(
            reader,
            from,
            async (entries) => {
              if (done) return;
              clearTimeout(timer);
              if (!(await each(entries))) return stop();
              if (!done) timer = setTimeout(stop, idleMs);
            },
            stop,
          ).catch(stop);
        });
      } finally {
        await channel?.close().catch(() => undefined);
        release();
      }
    },

    async close() {
      closed = true;
      await connection?.close().catch(() => undefined);
      connection = undefined;
    },
  };
}
