import type { JournalKind } from "@fundraise/bus";
import { type JournalEntry, type JournalMessage, spanOf } from "../format.ts";
import { matchesFilter, type ReplayFilter } from "../records.ts";
import { indexProblem } from "./connect.ts";
import type { Position } from "./positions.ts";

/**
 * Entries are stamped by their writers' clocks and flushed up to 100 ms late, so batches are only roughly
 * in time order in the stream: a batch that starts this long after `--until` ends a read.
 */
export const SKEW_MS = 2000;

export interface SelectOptions {
  from?: Position | undefined;
  until?: Position | undefined;
  key?: string | undefined;
  kind?: JournalKind | undefined;
}

export type BatchVerdict = "read" | "skip" | "stop";

/** Which batches a plain read decodes and which entries it keeps, by position, time, key and kind. */
export class Selection {
  private readonly filter: ReplayFilter;
  private readonly fromEntry: { offset: number; index: number } | undefined;
  private readonly untilEntry: { offset: number; index: number | undefined } | undefined;
  private readonly untilAt: number | undefined;

  constructor(options: SelectOptions) {
    const { from, until } = options;
    this.filter = {
      ...(options.key !== undefined ? { key: options.key } : {}),
      ...(options.kind !== undefined ? { kind: options.kind } : {}),
      ...(typeof from === "object" && "at" in from ? { notBefore: from.at } : {}),
      ...(typeof until === "object" && "at" in until ? { notAfter: until.at } : {}),
    };
    this.fromEntry =
      typeof from === "object" && "offset" in from
        ? { offset: from.offset, index: from.index ?? 0 }
        : undefined;
    this.untilEntry =
      typeof until === "object" && "offset" in until
        ? { offset: until.offset, index: until.index }
        : undefined;
    this.untilAt = this.filter.notAfter;
  }

  /** Decided from the headers alone: batches wholly before `--from` are not decoded, one far past `--until` ends. */
  batch(message: JournalMessage, offset: number): BatchVerdict {
    if (this.untilEntry && offset > this.untilEntry.offset) return "stop";
    const span = spanOf(message);
    const first = span?.first ?? secondsOf(message.properties.timestamp);
    if (this.untilAt !== undefined && first !== undefined && first > this.untilAt + SKEW_MS) return "stop";
    if (span && this.filter.notBefore !== undefined && span.last < this.filter.notBefore) return "skip";
    return "read";
  }

  /** Checks that positions naming an entry of this batch name one it has (exit 2 otherwise). */
  checkIndexes(offset: number, count: number): void {
    if (this.fromEntry && offset === this.fromEntry.offset && this.fromEntry.index >= count) {
      throw indexProblem("--from", offset, this.fromEntry.index, count);
    }
    const until = this.untilEntry;
    if (until?.index !== undefined && offset === until.offset && until.index >= count) {
      throw indexProblem("--until", offset, until.index, count);
    }
  }

  /** "stop" once past `--until`'s entry; "skip" for entries before `--from` or filtered out. */
  entry(entry: JournalEntry, offset: number, index: number): "take" | "skip" | "stop" {
    const until = this.untilEntry;
    if (until?.index !== undefined && offset === until.offset && index > until.index) return "stop";
    if (this.fromEntry && offset === this.fromEntry.offset && index < this.fromEntry.index) return "skip";
    return matchesFilter(entry, this.filter) ? "take" : "skip";
  }
}

function secondsOf(timestamp: unknown): number | undefined {
  return typeof timestamp === "number" ? timestamp * 1000 : undefined;
}
