export {
  JOURNAL_BATCH,
  JournalWriter,
  type JournalWriterOptions,
  journalMessagesOf,
  journalWriter,
} from "./journal.ts";
export { toPrintable, withoutBytes } from "./printable.ts";
export {
  type JournalRecord,
  matchesFilter,
  parseFrom,
  type ReplayFilter,
  type ReplayFrom,
  topicMatches,
} from "./records.ts";
export { type ReplayOptions, type ReplaySummary, replayJournal } from "./replay.ts";
export { declareJournal, JOURNAL_ARGUMENTS, JOURNAL_EXCHANGE, JOURNAL_QUEUE } from "./topology.ts";
