export {
  encodeBatch,
  entriesOf,
  JOURNAL_BATCH,
  JOURNAL_FORMAT,
  type JournalEntry,
  JournalHeader,
  type JournalMessage,
  mayConcern,
  spanOf,
} from "./format.ts";
export { JournalWriter, type JournalWriterOptions, journalWriter, LOCAL_PSEUDONYM_KEY } from "./journal.ts";
export { BadOptionError, ReplayError } from "./read/errors.ts";
export { isoMs, type Position, parsePosition, positionText } from "./read/positions.ts";
export type { JournalRecord, ReplayFrom, RepublishTarget } from "./records.ts";
export { type ReplayOptions, type ReplaySummary, replayJournal } from "./replay.ts";
export { decide, REPLAYED_FROM } from "./republish.ts";
export { type FindStoryOptions, type FoundStory, findStory, type StoryWindow } from "./story/find.ts";
export { renderStory, type StoryRecord, storyRecords } from "./story/render.ts";
export { buildStory, type Story, type StoryNode } from "./story/tree.ts";
export { type StreamBounds, streamBounds } from "./stream-end.ts";
export {
  declareJournal,
  JOURNAL_EXCHANGE,
  JOURNAL_QUEUE,
  LATE_EXCHANGE,
  LATE_QUEUE,
  MAX_AGE,
} from "./topology.ts";
