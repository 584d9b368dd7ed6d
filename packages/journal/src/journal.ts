import {
  amqpTimestamp,
  type BusJournal,
  CBOR_CONTENT_TYPE,
  Header,
  type JournalFactory,
  type JournalHost,
} from "@fundraise/bus";
import type { Channel, ConsumeMessage, Options } from "amqplib";
import { Encoder } from "cbor-x";
import { declareJournal, JOURNAL_EXCHANGE } from "./topology.ts";

/** The `type` and `x-bus-kind` of a journal message that carries several entries. */
export const JOURNAL_BATCH = "journal-batch";

/** One RPC request or reply as it was published, kept in a batch. */
export interface JournalEntry {
  routingKey: string;
  properties: Options.Publish;
  body: Buffer;
}

export interface JournalWriterOptions {
  /** How long an entry may wait for others (default 100 ms). */
  flushMs?: number;
  /** A batch is sent at once when its bodies reach this size (default 256 KiB). */
  maxBatchBytes?: number;
}

// Plain CBOR (no records, no tags): any CBOR reader gets maps, strings and byte strings back.
const cbor = new Encoder({ useRecords: false, mapsAsObjects: true, tagUint8Array: false });

/**
 * Copies of RPC requests and replies for the journal, sent in batches. The journal is a stream the
 * broker writes for every message it receives: one copy per request and one per reply doubled the
 * broker's work per call (docs/adr/0004-the-bus-journal.md). A batch is one message of
 * many entries, sent when `flushMs` has passed since its first entry, when it is large, or at close.
 * The journal stays what it was, a record kept for debugging and replay: a lost copy is not worth
 * failing a call for, and entries lost with a crashed process are at most `flushMs` of traffic.
 */
export class JournalWriter implements BusJournal {
  private entries: JournalEntry[] = [];
  private bytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly flushMs: number;
  private readonly maxBatchBytes: number;

  constructor(
    private readonly host: JournalHost,
    options: JournalWriterOptions = {},
  ) {
    this.flushMs = options.flushMs ?? 100;
    this.maxBatchBytes = options.maxBatchBytes ?? 256 * 1024;
  }

  declare(channel: Channel): Promise<void> {
    return declareJournal(channel);
  }

  /** Keeps the body as sent, unless `mode` is false (a call that carries secrets). */
  readonly copyAs: BusJournal["copyAs"] = (mode, routingKey, body, properties) => {
    if (mode) this.copy(routingKey, body, properties);
  };

  /** Keeps a copy of a message published to `routingKey` on `rpc` (or a reply sent to a caller). */
  copy(routingKey: string, body: Buffer, properties: Options.Publish): void {
    // A large body goes alone, as it was: re-encoding it into a batch would copy it again.
    if (body.length >= this.maxBatchBytes) {
      this.publish(routingKey, body, properties);
      return;
    }
    this.entries.push({ routingKey, properties, body });
    this.bytes += body.length;
    if (this.bytes >= this.maxBatchBytes) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.flushMs);
  }

  /** Sends what is waiting; the bus calls it before closing its channels. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const entries = this.entries;
    if (entries.length === 0) return;
    this.entries = [];
    this.bytes = 0;
    if (entries.length === 1) {
      const [only] = entries as [JournalEntry];
      this.publish(only.routingKey, only.body, only.properties);
      return;
    }
    this.publish(JOURNAL_BATCH, cbor.encode({ entries }), {
      type: JOURNAL_BATCH,
      contentType: CBOR_CONTENT_TYPE,
      timestamp: amqpTimestamp(),
      headers: { [Header.KIND]: JOURNAL_BATCH, [Header.PUBLISHED_BY]: this.host.service },
    });
  }

  private publish(routingKey: string, body: Buffer, properties: Options.Publish): void {
    const channel = this.host.channel();
    if (!channel) {
      this.host.log.debug({ routingKey }, "journal copy not published (no channel)");
      return;
    }
    try {
      channel.publish(JOURNAL_EXCHANGE, routingKey, body, properties);
    } catch (error) {
      this.host.log.debug({ err: error, routingKey }, "journal copy not published");
    }
  }
}

/**
 * What a bus takes as `journal`: `createAmqpBus({ ..., journal: journalWriter() })` declares the journal
 * on every (re)connect and copies the bus's RPC requests and replies to it, in batches.
 */
export const journalWriter =
  (options: JournalWriterOptions = {}): JournalFactory =>
  (host) =>
    new JournalWriter(host, options);

/** A journal delivery as the reader needs it. */
export type JournalMessage = Pick<ConsumeMessage, "content" | "fields" | "properties">;

/**
 * The messages a journal delivery holds: itself, or the entries of a batch, each as if it had been
 * journaled alone (same exchange and stream offset as the batch; `index` tells them apart).
 */
export function journalMessagesOf(message: JournalMessage): Array<JournalMessage & { index?: number }> {
  if (message.properties.type !== JOURNAL_BATCH) return [message];
  const { entries } = cbor.decode(message.content) as { entries: JournalEntry[] };
  const offset = message.properties.headers?.[Header.STREAM_OFFSET];
  return entries.map((entry, index) => ({
    index,
    content: Buffer.isBuffer(entry.body) ? entry.body : Buffer.from(entry.body),
    fields: { ...message.fields, routingKey: entry.routingKey },
    properties: {
      ...(entry.properties as ConsumeMessage["properties"]),
      headers: { ...entry.properties.headers, [Header.STREAM_OFFSET]: offset },
    },
  }));
}
