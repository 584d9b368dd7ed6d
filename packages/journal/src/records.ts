import {
  decodeBody,
  Exchanges,
  Header,
  type Headers,
  isMessageKind,
  type MessageKind,
  numberHeader,
  stringHeader,
} from "@fundraise/bus";
import type { JournalMessage } from "./journal.ts";

/** Where reading starts: a stream offset spec (`x-stream-offset`). */
export type ReplayFrom = "first" | "last" | "next" | { offset: number } | { time: Date };

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

/** A journal delivery as a printable record: its headers, and its JSON payload decoded. */
export function toRecord(message: JournalMessage & { index?: number }): JournalRecord {
  const properties = message.properties;
  const headers = (properties.headers ?? {}) as Headers;
  let payload: unknown;
  try {
    payload = decodeBody(message.content, properties.contentType);
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
    headers: rest,
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
