export { type JournalWriterOptions, journalMessagesOf, journalWriter } from "./journal.ts";
export type { JournalRecord, ReplayFrom } from "./records.ts";
export { type ReplayOptions, type ReplaySummary, replayJournal } from "./replay.ts";
export { declareJournal, JOURNAL_EXCHANGE, JOURNAL_QUEUE } from "./topology.ts";
