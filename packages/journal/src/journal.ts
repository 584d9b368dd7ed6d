import {
  type BusJournal,
  type JournalFactory,
  type JournalHost,
  type JournalNote,
  timeOfId,
} from "@fundraise/bus";
import { type Pseudonymize, pseudonymizer } from "@fundraise/protocol";
import type { ChannelModel } from "amqplib";
import { encodeBatch, type JournalEntry, traceIdOf } from "./format.ts";
import { redactEntry } from "./redact.ts";
import { declareJournal, JOURNAL_EXCHANGE, LATE_EXCHANGE } from "./topology.ts";

export interface JournalWriterOptions {
  /** How long an entry may wait for others (default 100 ms). */
  flushMs?: number;
  /** A batch is sent at once when its entries reach this size (default 256 KiB). */
  maxBatchBytes?: number;
  /**
   * An entry written this long after its request started (by the time in a time-ordered request id) also
   * goes to the late stream, where a request's story finds it without reading everything in between
   * (default 2000 ms).
   */
  lateAfterMs?: number;
  /** The journal's retention, as the stream's `x-max-age` (default 7D). */
  maxAge?: string;
  /** The key of the personal values' pseudonyms (`JOURNAL_PSEUDONYM_KEY`). */
  pseudonymKey?: string;
}

/** Entries waiting to leave for one stream. */
class Batch {
  entries: JournalEntry[] = [];
  bytes = 0;

  add(entry: JournalEntry): void {
    this.entries.push(entry);
    this.bytes += 200 + (entry.body?.length ?? 0);
  }

  take(): JournalEntry[] {
    const entries = this.entries;
    this.entries = [];
    this.bytes = 0;
    return entries;
  }
}

/**
 * The bus's journal: every RPC request and reply, event, consumer's handling and HTTP request of this
 * process, in batches. The journal is a stream the broker writes for every message it receives: one
 * message per entry doubled the broker's work per call (docs/adr/0004-the-bus-journal.md), so a batch is
 * sent when `flushMs` has passed since its first entry, when it is large, or at close. Personal values are
 * replaced before an entry is kept (redact.ts). A record for debugging and replay: a lost entry is not
 * worth failing a call for, and entries lost with a crashed process are at most `flushMs` of traffic.
 */
export class JournalWriter implements BusJournal {
  private readonly main = new Batch();
  private readonly late = new Batch();
  private timer: NodeJS.Timeout | undefined;
  private readonly flushMs: number;
  private readonly maxBatchBytes: number;
  private readonly lateAfterMs: number;
  private readonly maxAge: string;
  private readonly pseudonymize: Pseudonymize;

  constructor(
    private readonly host: JournalHost,
    options: JournalWriterOptions = {},
  ) {
    this.flushMs = options.flushMs ?? 100;
    this.maxBatchBytes = options.maxBatchBytes ?? 256 * 1024;
    this.lateAfterMs = options.lateAfterMs ?? 2000;
    this.maxAge = options.maxAge ?? "7D";
    this.pseudonymize = pseudonymizer(options.pseudonymKey ?? LOCAL_PSEUDONYM_KEY);
  }

  declare(connection: ChannelModel): Promise<void> {
    return declareJournal(connection, { maxAge: this.maxAge, log: this.host.log });
  }

  record(note: JournalNote): void {
    let entry: JournalEntry;
    try {
      entry = this.entryOf(note);
    } catch (error) {
      this.host.log.debug({ err: error, name: note.name }, "journal entry not kept");
      return;
    }
    this.main.add(entry);
    const started = entry.requestId === undefined ? undefined : timeOfId(entry.requestId);
    if (started !== undefined && entry.at - started > this.lateAfterMs) this.late.add(entry);
    if (this.main.bytes >= this.maxBatchBytes || this.late.bytes >= this.maxBatchBytes) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.flushMs);
  }

  /** Sends what is waiting; the bus calls it before closing its channels. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.send(JOURNAL_EXCHANGE, this.main.take());
    this.send(LATE_EXCHANGE, this.late.take());
  }

  private entryOf(note: JournalNote): JournalEntry {
    const entry: JournalEntry = {
      id: note.id,
      kind: note.kind,
      name: note.name,
      at: note.at,
      service: this.host.service,
    };
    if (note.requestId !== undefined) entry.requestId = note.requestId;
    const traceId = traceIdOf(note.traceparent);
    if (traceId !== undefined) entry.traceId = traceId;
    if (note.causedBy !== undefined) entry.causedBy = note.causedBy;
    if (note.correlationId !== undefined) entry.correlationId = note.correlationId;
    if (note.messageId !== undefined) entry.messageId = note.messageId;
    if (note.message) {
      entry.properties = note.message.properties;
      entry.body = note.message.body;
    }
    if (note.summary !== undefined) entry.summary = note.summary;
    return redactEntry(entry, note, this.pseudonymize);
  }

  private send(exchange: string, entries: JournalEntry[]): void {
    if (entries.length === 0) return;
    const channel = this.host.channel();
    if (!channel) {
      this.host.log.debug({ entries: entries.length }, "journal entries not published (no channel)");
      return;
    }
    try {
      const batch = encodeBatch(entries, this.host.service);
      channel.publish(exchange, "", batch.body, batch.properties);
    } catch (error) {
      this.host.log.debug({ err: error, entries: entries.length }, "journal entries not published");
    }
  }
}

/**
 * The pseudonym key of a local run. A deployment sets its own secret (JOURNAL_PSEUDONYM_KEY): with this
 * one anybody can test a guess of an e-mail address against its pseudonym.
 */
export const LOCAL_PSEUDONYM_KEY = "fundraise-local-journal-key";

/**
 * What a bus takes as `journal`: `createAmqpBus({ ..., journal: journalWriter() })` declares the journal
 * on every (re)connect and records the bus's traffic in it, in batches.
 */
export const journalWriter =
  (options: JournalWriterOptions = {}): JournalFactory =>
  (host) =>
    new JournalWriter(host, options);
