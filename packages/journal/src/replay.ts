import { randomUUID } from "node:crypto";
import { carriedHeaders, compactHeaders, Header, type MessageKind, redactUrl } from "@fundraise/bus";
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage, Options } from "amqplib";
import amqp from "amqplib";
import { type JournalMessage, journalMessagesOf } from "./journal.ts";
import {
  type JournalRecord,
  matchesFilter,
  type ReplayFilter,
  type ReplayFrom,
  republishTarget,
  streamOffsetArgument,
  toRecord,
} from "./records.ts";
import { JOURNAL_QUEUE } from "./topology.ts";

export interface ReplayOptions {
  url: string;
  from?: ReplayFrom;
  /** Routing-key pattern with topic-binding syntax: `*` one word, `#` zero or more. */
  key?: string;
  kind?: MessageKind;
  /** Stop after this many matching messages. */
  limit?: number;
  /** Keep reading new messages until aborted; otherwise stop once the stream is idle for `idleMs`. */
  follow?: boolean;
  idleMs?: number;
  /** Re-publish matches: events to `events` with their routing key, or any kind to `toQueue`. */
  republish?: boolean;
  toQueue?: string;
  /** With republish: report what would be re-published, publish nothing. */
  dryRun?: boolean;
  /** Re-published messages get new message ids, so idempotent consumers process them again. */
  freshIds?: boolean;
  /** Also replay messages that are themselves replays (skipped by default: no replay loops). */
  includeReplayed?: boolean;
  /** Receives every matching message (the CLI prints it as a JSON line). */
  onRecord?: (record: JournalRecord) => void;
  signal?: AbortSignal;
}

export interface ReplaySummary {
  /** Messages read from the journal. */
  read: number;
  /** Messages that passed the filters. */
  matched: number;
  republished: number;
  skipped: number;
  lastOffset: number | undefined;
}

/**
 * Reads the journal stream from `from`, filters, and prints and/or re-publishes. Resolves with a summary
 * once `limit` messages matched, the stream stayed idle for `idleMs` (unless `follow`), or `signal` aborted.
 */
export async function replayJournal(options: ReplayOptions): Promise<ReplaySummary> {
  const from = options.from ?? "first";
  const filter: ReplayFilter = {
    ...(options.key !== undefined ? { key: options.key } : {}),
    ...(options.kind !== undefined ? { kind: options.kind } : {}),
    ...(typeof from === "object" && "time" in from ? { notBefore: from.time } : {}),
  };
  const idleMs = options.idleMs ?? 1000;
  const summary: ReplaySummary = { read: 0, matched: 0, republished: 0, skipped: 0, lastOffset: undefined };
  let connection: ChannelModel;
  try {
    connection = await amqp.connect(options.url, {
      clientProperties: { connection_name: "bus-replay" },
      timeout: 10_000,
    });
  } catch (error) {
    throw new Error(`cannot connect to ${redactUrl(options.url)}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  let channelError: Error | undefined;
  const remember = (error: Error) => {
    channelError ??= error;
  };
  connection.on("error", remember);
  try {
    const reader: Channel = await connection.createChannel();
    reader.on("error", remember);
    // Stream consumers need a prefetch and manual acks; the ack only advances the credit.
    await reader.prefetch(500);
    const publisher: ConfirmChannel | undefined =
      options.republish && !options.dryRun ? await connection.createConfirmChannel() : undefined;
    publisher?.on("error", remember);

    await new Promise<void>((resolve, reject) => {
      let done = false;
      let idleTimer: NodeJS.Timeout | undefined;
      let consumerTag: string | undefined;
      let queue: Promise<void> = Promise.resolve();

      const finish = (error?: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(idleTimer);
        options.signal?.removeEventListener("abort", onAbort);
        const cancelled = consumerTag ? reader.cancel(consumerTag).catch(() => undefined) : Promise.resolve();
        void cancelled
          .then(() => queue)
          .then(() => (error === undefined ? resolve() : reject(error)), reject);
      };
      const armIdle = () => {
        if (options.follow) return;
        clearTimeout(idleTimer);
        idleTimer = setTimeout(() => finish(), idleMs);
      };
      const onAbort = () => finish();
      if (options.signal?.aborted) {
        finish();
        return;
      }
      options.signal?.addEventListener("abort", onAbort);
      reader.on("close", () => finish(done ? undefined : journalError(channelError)));

      const handleDelivery = async (delivery: ConsumeMessage) => {
        let messages: ReturnType<typeof journalMessagesOf>;
        try {
          messages = journalMessagesOf(delivery);
        } catch (error) {
          throw new Error("a journal batch that does not decode", { cause: error });
        }
        for (const message of messages) {
          if (done) return;
          await handle(message);
        }
      };
      const handle = async (message: JournalMessage & { index?: number }) => {
        summary.read++;
        const record = toRecord(message);
        summary.lastOffset = record.offset ?? summary.lastOffset;
        if (!matchesFilter(record, filter)) return;
        if (options.limit !== undefined && summary.matched >= options.limit) return;
        summary.matched++;
        if (options.republish) {
          if (
            !options.includeReplayed &&
            message.properties.headers?.[Header.REPLAYED_FROM_OFFSET] !== undefined
          ) {
            record.action = "skipped";
            record.reason = "already a replay";
            summary.skipped++;
          } else {
            const target = republishTarget(record, options.toQueue);
            if ("skip" in target) {
              record.action = "skipped";
              record.reason = target.skip;
              summary.skipped++;
            } else if (!publisher) {
              record.action = "would-republish";
            } else {
              await republish(publisher, message, target, record.offset, options.freshIds ?? false);
              record.action = "republished";
              summary.republished++;
            }
          }
        }
        options.onRecord?.(record);
        if (options.limit !== undefined && summary.matched >= options.limit) finish();
      };

      reader
        .consume(
          JOURNAL_QUEUE,
          (message) => {
            if (!message) {
              finish(new Error("the journal consumer was cancelled by the broker"));
              return;
            }
            if (done) return;
            armIdle();
            // Sequential, so re-published messages keep the journal's order.
            queue = queue
              .then(() => (done ? undefined : handleDelivery(message)))
              .then(() => {
                try {
                  reader.ack(message);
                } catch {
                  // Closing: the stream has no redelivery to worry about.
                }
              })
              .catch((error: unknown) => finish(error));
          },
          { noAck: false, arguments: { "x-stream-offset": streamOffsetArgument(from) } },
        )
        .then(
          (ok) => {
            consumerTag = ok.consumerTag;
            armIdle();
          },
          (error: Error) => finish(journalError(error)),
        );
    });
    await reader.close().catch(() => undefined);
    await publisher?.close().catch(() => undefined);
  } finally {
    await connection.close().catch(() => undefined);
  }
  return summary;
}

function journalError(error: Error | undefined): Error {
  if (error && /NOT_FOUND - no queue/.test(error.message)) {
    return new Error(
      `no journal (${JOURNAL_QUEUE}) in this vhost: no bus with journaling has connected to it`,
      {
        cause: error,
      },
    );
  }
  return new Error(`the journal channel closed${error ? `: ${error.message}` : ""}`, { cause: error });
}

async function republish(
  channel: ConfirmChannel,
  message: JournalMessage,
  target: { exchange: string; routingKey: string },
  offset: number | undefined,
  freshIds: boolean,
): Promise<void> {
  const p = message.properties;
  const headers = carriedHeaders(p.headers);
  // A replayed request must not be dropped as late nor wait for a reply nobody is listening for.
  delete headers[Header.DEADLINE];
  headers[Header.REPLAYED_FROM_OFFSET] = offset ?? -1;
  const properties: Options.Publish = { persistent: true, headers: compactHeaders(headers) };
  if (freshIds) properties.messageId = randomUUID();
  else if (p.messageId !== undefined) properties.messageId = p.messageId;
  if (p.timestamp !== undefined) properties.timestamp = p.timestamp;
  if (p.type !== undefined) properties.type = p.type;
  if (p.contentType !== undefined) properties.contentType = p.contentType;
  if (p.correlationId !== undefined) properties.correlationId = p.correlationId;
  await new Promise<void>((resolve, reject) => {
    channel.publish(target.exchange, target.routingKey, message.content, properties, (error) =>
      error ? reject(error) : resolve(),
    );
  });
}
