import { ProjectsEvents, UsersEvents } from "@fundraise/protocol";

/** One event of the live log: its place (the stream offset, the resume position) and what it says. */
export interface LiveEntry {
  offset: number;
  routingKey: string;
  /** The publisher's message id: a republished copy (an outbox relay's retry) has the same one. */
  messageId: string | undefined;
  payload: unknown;
}

/** The events live streams are made of; the log holds these and nothing else. */
export const LIVE_EVENTS = [
  ProjectsEvents.changed.name,
  ProjectsEvents.invitationChanged.name,
  UsersEvents.roleChanged.name,
  UsersEvents.deleted.name,
] as const;

export interface ReadOptions {
  signal: AbortSignal;
  /** A read that received nothing for this long is at the log's end. */
  idleMs: number;
}

/**
 * A durable, ordered log of the bus's events (docs/adr/0028-live-updates.md): every gateway replica
 * follows its end for its own subscribers, and reads it from a position for a subscriber that resumes.
 */
export interface LiveLog {
  /**
   * Follows the log from its current end: batches reach `onEntries` in order, one at a time (the next
   * waits for the promise). Resolves once following; reconnects on its own afterwards, from where it was.
   */
  start(onEntries: (entries: LiveEntry[]) => Promise<void>): Promise<void>;
  /** The offset of the last entry followed (or the log's end at start); null while the log is empty. */
  readonly position: number | null;
  /**
   * Reads from offset `from` (inclusive) in order until `each` answers false, the signal aborts or nothing
   * arrives for `idleMs`. Entries before `from` may be delivered too (a chunk's head): skip them.
   */
  read(from: number, each: (entries: LiveEntry[]) => Promise<boolean>, options: ReadOptions): Promise<void>;
  close(): Promise<void>;
}
