import { randomUUID } from "node:crypto";
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage, Options } from "amqplib";
import amqp from "amqplib";
import { decodeBody, toPrintable } from "./codec.ts";
import { redactUrl } from "./connection.ts";
import {
  carriedHeaders,
  compactHeaders,
  Header,
  type Headers,
  isMessageKind,
  type MessageKind,
  numberHeader,
  stringHeader,
} from "./headers.ts";
import { type JournalMessage, journalMessagesOf } from "./journal.ts";
import { Exchanges, JOURNAL_QUEUE } from "./topology.ts";

/** Where reading starts: a stream offset spec (`x-stream-offset`). */
export type ReplayFrom = "first" | "last" | "next" | { offset: number } | { time: Date };

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

export interface JournalRecord {
  offset: number | undefined;
  /** The entry's place in a batch of copies sharing one offset (journal.ts); absent for a message alone. */
  index?: number;
  time: string | undefined;
  exchange: string;
  routingKey: string;
  kind: MessageKind;
  type: string | undefined;
  messageId: string | undefined;
  correlationId: string | undefined;
  requestId: string | undefined;
  contentType: string | undefined;
  bytes: number;
  headers: Headers;
  payload: unknown;
  /** With republish: what happened to this message. */
  action?: "republished" | "would-republish" | "skipped";
  reason?: string;
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

/** AMQP topic matching: words split on `.`, `*` is exactly one word, `#` is zero or more. */
export function topicMatches(pattern: string, routingKey: string): boolean {
  const p = pattern.split(".");
  const k = routingKey.split(".");
  const memo = new Map<string, boolean>();
  const match = (i: number, j: number): boolean => {
    const id = `${i}:${j}`;
    const hit = memo.get(id);
    if (hit !== undefined) return hit;
    let result: boolean;
    if (i === p.length) result = j === k.length;
    else if (p[i] === "#") result = match(i + 1, j) || (j < k.length && match(i, j + 1));
    else result = j < k.length && (p[i] === "*" || p[i] === k[j]) && match(i + 1, j + 1);
    memo.set(id, result);
    return result;
  };
  return match(0, 0);
}

/** Parses `first|last|next|<offset>|offset:<n>|<ISO time>`. */
export function parseFrom(value: string): ReplayFrom {
  const text = value.trim();
  if (text === "first" || text === "last" || text === "next") return text;
  const offsetMatch = /^(?:offset[:= ]\s*)?(\d+)$/.exec(text);
  if (offsetMatch) return { offset: Number(offsetMatch[1]) };
  // A date needs at least year-month-day: "12" above is an offset, never a year.
  if (/^\d{4}-\d{2}-\d{2}/.test(text)) {
    const time = new Date(text);
    if (!Number.isNaN(time.getTime())) return { time };
  }
  throw new Error(`--from: expected first, last, next, an offset or an ISO time, got "${value}"`);
}

/** The `x-stream-offset` argument for a start position; times go as AMQP timestamps (seconds). */
export function streamOffsetArgument(from: ReplayFrom): unknown {
  if (typeof from === "string") return from;
  if ("offset" in from) return from.offset;
  return { "!": "timestamp", value: Math.floor(from.time.getTime() / 1000) };
}

export function kindOf(headers: Headers | undefined): MessageKind {
  const kind = stringHeader(headers, Header.KIND);
  return isMessageKind(kind) ? kind : "event";
}

/** A journal delivery as a printable record: decoded payload, bytes abbreviated. */
export function toRecord(message: JournalMessage & { index?: number }): JournalRecord {
  const properties = message.properties;
  const headers = (properties.headers ?? {}) as Headers;
  let payload: unknown;
  try {
    payload = toPrintable(decodeBody(message.content, properties.contentType));
  } catch {
    payload = {
      $undecodable: message.content.length,
      base64: message.content.subarray(0, 64).toString("base64"),
    };
  }
  const timestamp = typeof properties.timestamp === "number" ? properties.timestamp : undefined;
  const { [Header.STREAM_OFFSET]: _offset, ...rest } = headers;
  return {
    offset: numberHeader(headers, Header.STREAM_OFFSET),
    ...(message.index === undefined ? {} : { index: message.index }),
    time: timestamp === undefined ? undefined : new Date(timestamp * 1000).toISOString(),
    exchange: message.fields.exchange,
    routingKey: message.fields.routingKey,
    kind: kindOf(headers),
    type: typeof properties.type === "string" ? properties.type : undefined,
    messageId: typeof properties.messageId === "string" ? properties.messageId : undefined,
    correlationId: typeof properties.correlationId === "string" ? properties.correlationId : undefined,
    requestId: stringHeader(headers, Header.REQUEST_ID),
    contentType: typeof properties.contentType === "string" ? properties.contentType : undefined,
    bytes: message.content.length,
    headers: toPrintable(rest) as Headers,
    payload,
  };
}

export interface ReplayFilter {
  key?: string;
  kind?: MessageKind;
  /** Chunk-level stream seeking may start a little early: drop what precedes the requested time. */
  notBefore?: Date;
}

export function matchesFilter(
  record: Pick<JournalRecord, "routingKey" | "kind" | "time">,
  filter: ReplayFilter,
) {
  if (filter.key !== undefined && !topicMatches(filter.key, record.routingKey)) return false;
  if (filter.kind !== undefined && record.kind !== filter.kind) return false;
  if (filter.notBefore !== undefined && record.time !== undefined) {
    // AMQP timestamps have second resolution: compare at that resolution.
    if (Date.parse(record.time) < Math.floor(filter.notBefore.getTime() / 1000) * 1000) return false;
  }
  return true;
}

/** Where a matching message goes when re-published, or why it cannot be. */
export function republishTarget(
  record: Pick<JournalRecord, "kind" | "routingKey">,
  toQueue: string | undefined,
): { exchange: string; routingKey: string } | { skip: string } {
  if (toQueue !== undefined) return { exchange: "", routingKey: toQueue };
  if (record.kind === "event") return { exchange: Exchanges.EVENTS, routingKey: record.routingKey };
  return { skip: `a ${record.kind} is only re-published with --to-queue` };
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
