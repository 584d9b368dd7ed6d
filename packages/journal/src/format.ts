import {
  CBOR_CONTENT_TYPE,
  Header,
  type Headers,
  isJournalKind,
  isMessageKind,
  type JournalKind,
  numberHeader,
  stringHeader,
} from "@fundraise/bus";
import type { ConsumeMessage, Options } from "amqplib";
import { Decoder, Encoder } from "cbor-x";

/**
 * How the journal stores its entries (docs/adr/0034-debugging-from-the-bus.md). Format 2: every message
 * in the stream is a batch, a CBOR map `{ entries: JournalEntry[] }`, whose headers say what a reader may
 * skip without decoding it: the ids it concerns (`x-ids`) and its time span (`x-first-at`, `x-last-at`).
 * Format 1 (before): events as they were routed, RPC copies alone or in batches of
 * `{ routingKey, properties, body }`; `entriesOf` reads both.
 */
export const JOURNAL_FORMAT = 2;
/** The `type` and `x-bus-kind` of a journal message that carries entries. */
export const JOURNAL_BATCH = "journal-batch";

export const JournalHeader = {
  FORMAT: "x-journal-format",
  /** ` <id> <id> … `: the request and trace ids of the batch's entries, space-delimited at both ends. */
  IDS: "x-ids",
  FIRST_AT: "x-first-at",
  LAST_AT: "x-last-at",
} as const;

/** One entry as the journal keeps it. */
export interface JournalEntry {
  /** Unique in the journal (JournalNote.id). */
  id: string;
  kind: JournalKind;
  /** RPC or event name; `METHOD route` of an HTTP request. */
  name: string;
  /** When it happened, in ms, by the clock of the process that wrote it. */
  at: number;
  /** The process's service. */
  service: string;
  requestId?: string;
  traceId?: string;
  causedBy?: string;
  correlationId?: string;
  messageId?: string;
  /** rpc-request, rpc-reply, event: the message's properties as it was sent. */
  properties?: Options.Publish;
  /** rpc-request, rpc-reply, event: its body, personal values replaced (`redacted` lists where). */
  body?: Uint8Array;
  redacted?: string[];
  /** http, delivery: what happened. */
  summary?: Record<string, unknown>;
}

// Plain CBOR (no records, no tags): any CBOR reader gets maps, strings and byte strings back.
const cbor = new Encoder({ useRecords: false, mapsAsObjects: true, tagUint8Array: false });
const decoder = new Decoder({ useRecords: false, mapsAsObjects: true });

export interface EncodedBatch {
  body: Buffer;
  properties: Options.Publish;
}

/** A batch as it is published: its body and the headers that let a reader skip it. */
export function encodeBatch(entries: JournalEntry[], service: string): EncodedBatch {
  const ids = new Set<string>();
  let first = Number.POSITIVE_INFINITY;
  let last = 0;
  for (const entry of entries) {
    if (entry.requestId) ids.add(entry.requestId);
    if (entry.traceId) ids.add(entry.traceId);
    if (entry.at < first) first = entry.at;
    if (entry.at > last) last = entry.at;
  }
  return {
    body: cbor.encode({ entries }),
    properties: {
      type: JOURNAL_BATCH,
      contentType: CBOR_CONTENT_TYPE,
      timestamp: Math.floor(first / 1000),
      headers: {
        [Header.KIND]: JOURNAL_BATCH,
        [Header.PUBLISHED_BY]: service,
        [JournalHeader.FORMAT]: JOURNAL_FORMAT,
        [JournalHeader.IDS]: ` ${[...ids].join(" ")} `,
        [JournalHeader.FIRST_AT]: first,
        [JournalHeader.LAST_AT]: last,
      },
    },
  };
}

/** A journal delivery as a reader needs it. */
export type JournalMessage = Pick<ConsumeMessage, "content" | "fields" | "properties">;

/** Whether a journal message may hold an entry of one of `ids` (false: it surely does not). */
export function mayConcern(message: JournalMessage, ids: readonly string[]): boolean {
  const listed = stringHeader(message.properties.headers, JournalHeader.IDS);
  if (listed === undefined) return true; // format 1: only decoding tells
  return ids.some((id) => listed.includes(` ${id} `));
}

/** The time span of a journal message's entries (ms), when its headers tell it. */
export function spanOf(message: JournalMessage): { first: number; last: number } | undefined {
  const headers = message.properties.headers;
  const first = numberHeader(headers, JournalHeader.FIRST_AT);
  const last = numberHeader(headers, JournalHeader.LAST_AT);
  return first === undefined || last === undefined ? undefined : { first, last };
}

/** The entries a journal message holds, in order, whatever format it was written in. */
export function entriesOf(message: JournalMessage): JournalEntry[] {
  const { properties } = message;
  if (properties.type !== JOURNAL_BATCH) return [entryOfMessage(message)];
  const decoded = decoder.decode(message.content) as { entries?: unknown };
  if (!decoded || !Array.isArray(decoded.entries)) throw new Error("a journal batch without entries");
  if (numberHeader(properties.headers, JournalHeader.FORMAT) === JOURNAL_FORMAT) {
    return decoded.entries as JournalEntry[];
  }
  // Format 1: copies of RPC messages, each `{ routingKey, properties, body }`.
  const offset = numberHeader(properties.headers, Header.STREAM_OFFSET);
  return (
    decoded.entries as Array<{ routingKey: string; properties: Options.Publish; body: Uint8Array }>
  ).map((entry, index) =>
    entryOfMessage(
      {
        content: Buffer.from(entry.body),
        fields: { ...message.fields, routingKey: entry.routingKey },
        properties: entry.properties as ConsumeMessage["properties"],
      },
      `offset:${offset ?? "?"}:${index}`,
    ),
  );
}

/**
 * A format-1 message (an event as routed, an RPC copy) as an entry: times have second resolution. One
 * without a messageId is named by its place in the stream.
 */
function entryOfMessage(message: JournalMessage, place?: string): JournalEntry {
  const p = message.properties;
  const headers = (p.headers ?? {}) as Headers;
  const kindHeader = stringHeader(headers, Header.KIND);
  const kind: JournalKind = isMessageKind(kindHeader) || isJournalKind(kindHeader) ? kindHeader : "event";
  const messageId = typeof p.messageId === "string" ? p.messageId : undefined;
  const traceparent = stringHeader(headers, Header.TRACEPARENT);
  return {
    id: messageId ?? place ?? `offset:${numberHeader(headers, Header.STREAM_OFFSET) ?? "?"}:0`,
    kind,
    name: typeof p.type === "string" ? p.type : message.fields.routingKey,
    at: typeof p.timestamp === "number" ? p.timestamp * 1000 : 0,
    service: stringHeader(headers, Header.PUBLISHED_BY) ?? "",
    ...optional("requestId", stringHeader(headers, Header.REQUEST_ID)),
    ...optional("traceId", traceIdOf(traceparent)),
    ...optional("correlationId", typeof p.correlationId === "string" ? p.correlationId : undefined),
    ...optional("messageId", kind === "event" ? messageId : undefined),
    properties: p as Options.Publish,
    body: message.content,
  };
}

/** The trace id of a W3C traceparent (`00-<trace>-<span>-<flags>`). */
export function traceIdOf(traceparent: string | undefined): string | undefined {
  if (traceparent === undefined || traceparent.length < 35) return undefined;
  return traceparent.slice(3, 35);
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
