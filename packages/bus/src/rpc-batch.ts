import type { Message, MessageProperties, Options } from "amqplib";
import { Encoder } from "cbor-x";
import { CBOR_CONTENT_TYPE } from "./codec.ts";
import { amqpTimestamp, Header, stringHeader } from "./headers.ts";

/**
 * RPC requests (and replies) that leave a process in the same turn of its event loop for the same
 * destination travel as one AMQP message: the broker's work and the frames and socket writes on both
 * ends are paid per message, not per call (docs/adr/0003-the-bus-cost-per-call.md). Each entry keeps the
 * properties and body it would have had alone, so a server handles, journals and answers it exactly as a
 * message of its own; a single call still goes as a plain message.
 */
export const RpcBatch = {
  /** `x-bus-kind` of a message of several requests for one RPC name. */
  REQUESTS: "rpc-request-batch",
  /** `x-bus-kind` of a message of several replies for one caller. */
  REPLIES: "rpc-reply-batch",
} as const;

export type BatchKind = (typeof RpcBatch)[keyof typeof RpcBatch];

/** At most this many calls share a message: a batch is one delivery, one place of a server's prefetch. */
export const MAX_BATCH_ENTRIES = 32;
/** Calls are added to a batch while its bodies stay below this; a larger body goes alone. */
export const MAX_BATCH_BYTES = 64 * 1024;

/** One message inside a batch: what it would have been alone. */
export interface BatchEntry {
  properties: Options.Publish;
  body: Buffer;
}

// Plain CBOR (no records, no tags): properties come back as maps, bodies as byte strings.
const cbor = new Encoder({ useRecords: false, mapsAsObjects: true, tagUint8Array: false });

/** A batch message of `kind` holding `entries`, published by `service`. */
export function packBatch(
  kind: BatchKind,
  service: string,
  entries: BatchEntry[],
): { body: Buffer; properties: Options.Publish } {
  return {
    body: cbor.encode(entries.map(({ properties, body }) => [properties, body])),
    properties: {
      contentType: CBOR_CONTENT_TYPE,
      timestamp: amqpTimestamp(),
      headers: { [Header.KIND]: kind, [Header.PUBLISHED_BY]: service },
    },
  };
}

/** A message as a receiver reads it: its properties and its body. */
export type Received = Pick<Message, "content" | "properties">;

/**
 * The messages `message` carries: the entries of a batch of `kind`, or the message itself when it is not
 * one. Throws when a batch's body cannot be read.
 */
export function unbatch(message: Received, kind: BatchKind): Received[] {
  if (stringHeader(message.properties.headers, Header.KIND) !== kind) return [message];
  const decoded: unknown = cbor.decode(message.content);
  if (!Array.isArray(decoded)) throw new Error("an RPC batch is not an array");
  return decoded.map((item: unknown) => {
    if (!Array.isArray(item) || typeof item[0] !== "object" || !(item[1] instanceof Uint8Array)) {
      throw new Error("an RPC batch entry is not [properties, body]");
    }
    const body = item[1] as Uint8Array;
    return {
      properties: { headers: {}, ...item[0] } as MessageProperties,
      content: Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength),
    };
  });
}

/**
 * The messages that carry `items`: one alone as it is, several as batches of `kind` (at most
 * MAX_BATCH_ENTRIES each, bodies under MAX_BATCH_BYTES; a larger body goes alone).
 */
export function* messagesOf<T extends BatchEntry>(
  kind: BatchKind,
  service: string,
  items: T[],
): Generator<{ entries: T[]; body: Buffer; properties: Options.Publish }> {
  for (const entries of batchesOf(items)) {
    const [only] = entries as [T];
    if (entries.length === 1) yield { entries, body: only.body, properties: only.properties };
    else yield { entries, ...packBatch(kind, service, entries) };
  }
}

/**
 * Collects items per key during one turn of the event loop and hands each key's items to `send` at the
 * end of it (setImmediate: after the I/O callbacks of this turn, so calls made while handling a burst of
 * sockets or replies meet). Adds no timer and no wait beyond the turn.
 */
export class Coalescer<T> {
  private waiting = new Map<string, T[]>();
  private scheduled = false;

  constructor(private readonly send: (key: string, items: T[]) => void) {}

  add(key: string, item: T): void {
    const items = this.waiting.get(key);
    if (items) items.push(item);
    else this.waiting.set(key, [item]);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  flush(): void {
    this.scheduled = false;
    const waiting = this.waiting;
    if (waiting.size === 0) return;
    this.waiting = new Map();
    for (const [key, items] of waiting) this.send(key, items);
  }
}

/** Splits `items` into batches of at most MAX_BATCH_ENTRIES whose bodies stay under MAX_BATCH_BYTES. */
export function* batchesOf<T extends { body: Buffer }>(items: T[]): Generator<T[]> {
  let batch: T[] = [];
  let bytes = 0;
  for (const item of items) {
    if (
      batch.length > 0 &&
      (batch.length === MAX_BATCH_ENTRIES || bytes + item.body.length > MAX_BATCH_BYTES)
    ) {
      yield batch;
      batch = [];
      bytes = 0;
    }
    batch.push(item);
    bytes += item.body.length;
  }
  if (batch.length > 0) yield batch;
}
