import { decodeBody, Header, type Headers, type JournalKind } from "@fundraise/bus";
import type { Options } from "amqplib";
import type { JournalEntry } from "./format.ts";
import { keyMatches } from "./read/catalog.ts";
import { isoMs, type Position } from "./read/positions.ts";

export { topicMatches } from "./read/catalog.ts";

/** Where a plain read starts (kept under its former name). */
export type ReplayFrom = Position;

/** Where a re-published entry goes: an exchange and routing key, or one queue (the default exchange). */
export type RepublishTarget = { exchange: string; routingKey: string } | { queue: string };

/** One journal entry as the replay CLI prints it (one JSON line): its ids as kept, its time and body readable. */
export interface JournalRecord extends Omit<JournalEntry, "at" | "properties" | "body"> {
  /** `<offset>:<index>`: the batch's stream offset and the entry's place in it (`--from` takes it back). */
  position: string;
  /** ISO 8601 with milliseconds. */
  at: string;
  /** The message's AMQP properties as sent, but its headers. */
  properties?: Omit<Options.Publish, "headers">;
  headers?: Headers;
  /** The body decoded (JSON); `{ $undecodable }` when it is not. */
  payload?: unknown;
  /** With --republish: what happened to this entry, and why when it was not re-published. */
  action?: "republished" | "would-republish" | "skipped" | "refused" | "unroutable";
  reason?: string;
  target?: RepublishTarget;
}

/** The printable record of an entry found at `position`: its body is decoded only here, for matches. */
export function recordOf(entry: JournalEntry, position: string): JournalRecord {
  const record: JournalRecord = {
    position,
    id: entry.id,
    kind: entry.kind,
    name: entry.name,
    at: isoMs(entry.at),
    service: entry.service,
  };
  if (entry.requestId !== undefined) record.requestId = entry.requestId;
  if (entry.traceId !== undefined) record.traceId = entry.traceId;
  if (entry.causedBy !== undefined) record.causedBy = entry.causedBy;
  if (entry.correlationId !== undefined) record.correlationId = entry.correlationId;
  if (entry.messageId !== undefined) record.messageId = entry.messageId;
  if (entry.properties) {
    const { headers, ...properties } = entry.properties;
    record.properties = properties;
    if (headers) {
      const { [Header.STREAM_OFFSET]: _offset, ...rest } = headers as Headers;
      record.headers = rest;
    }
  }
  if (entry.body !== undefined) record.payload = payloadOf(entry);
  if (entry.summary !== undefined) record.summary = entry.summary;
  if (entry.redacted !== undefined) record.redacted = entry.redacted;
  return record;
}

/** An entry's body as a Buffer (CBOR hands byte strings back as Uint8Array or Buffer). */
export function bodyOf(entry: JournalEntry): Buffer | undefined {
  const body = entry.body;
  if (body === undefined) return undefined;
  return Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/** The decoded body; one that does not decode stays visible instead of failing the read. */
export function payloadOf(entry: JournalEntry): unknown {
  const body = bodyOf(entry);
  if (body === undefined) return undefined;
  try {
    return decodeBody(body, entry.properties?.contentType);
  } catch {
    return { $undecodable: body.length, base64: body.subarray(0, 64).toString("base64") };
  }
}

export interface ReplayFilter {
  /** Routing-key pattern matched against entry names (`keyMatches`). */
  key?: string;
  kind?: JournalKind;
  /** Entry times (ms), inclusive. */
  notBefore?: number;
  notAfter?: number;
}

export function matchesFilter(
  entry: Pick<JournalEntry, "kind" | "name" | "at">,
  filter: ReplayFilter,
): boolean {
  if (filter.kind !== undefined && entry.kind !== filter.kind) return false;
  if (filter.key !== undefined && !keyMatches(filter.key, entry.kind, entry.name)) return false;
  if (filter.notBefore !== undefined && entry.at < filter.notBefore) return false;
  if (filter.notAfter !== undefined && entry.at > filter.notAfter) return false;
  return true;
}
