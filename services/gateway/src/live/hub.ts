import { type Caller, roleInSession, type SessionState } from "@fundraise/protocol";
import type { Logger } from "@fundraise/service-kit";
import { type SessionStore, sessionError } from "../plugins/auth.ts";
import type { LiveEntry, LiveLog } from "./log.ts";
import type { Outbound } from "./messages.ts";
import { type Prepared, type ProjectView, prepare, projectMessageFor, SeenIds } from "./prepare.ts";

/** Who a stream speaks for: null caller when anonymous; the token's version and expiry otherwise. */
export interface StreamIdentity {
  caller: Caller | null;
  tokenVersion: number;
  expiresAt: number | null;
}

/** The HTTP side of one stream (routes/events.ts over @fastify/sse). */
export interface StreamConnection {
  /** Writes a message; answers the bytes the connection holds unsent. */
  write(message: Outbound): number;
  /**
   * Ends the stream (the client reconnects with Last-Event-ID); `abrupt` drops what is unsent at once
   * (a subscriber that stopped reading would never let a graceful end finish).
   */
  end(abrupt?: boolean): void;
}

export interface LiveHubOptions {
  log: LiveLog;
  views(ids: number[]): Promise<ProjectView[]>;
  sessions: SessionStore;
  logger: Logger;
  /** A subscriber holding more unsent bytes than this is cut off (default 1 MiB). */
  maxBufferedBytes?: number;
  /** Messages kept for a subscriber still reading its missed ones (default 10,000). */
  maxPending?: number;
  /** How often a stream's position is sent as an id-only message when it moved (default 15 s). */
  positionEveryMs?: number;
  /** A read of missed messages that receives nothing this long is at the log's end (default 500 ms). */
  catchUpIdleMs?: number;
  /** `retry:` advice in the first message (default 2,000 ms). */
  retryMs?: number;
}

interface Subscriber {
  identity: StreamIdentity;
  connection: StreamConnection;
  /** The last offset this subscriber's messages were decided for (sent or not); -1 before any. */
  position: number;
  /** The last id written to the client. */
  sentId: number;
  /** Set while missed messages are read: live ones wait here. */
  pending: Prepared[] | null;
  abort: AbortController;
  expiry: NodeJS.Timeout | undefined;
}

export interface LiveHub {
  start(): Promise<void>;
  /** Attaches a stream: from `lastEventId` (its missed messages first) or from now. Answers its detach. */
  subscribe(
    identity: StreamIdentity,
    connection: StreamConnection,
    lastEventId: string | undefined,
  ): () => void;
  /** Sends a message without a position to every subscriber that is live (chain progress). */
  broadcast(message: Outbound): void;
  readonly size: number;
  /** Ends every stream (SIGTERM: clients reconnect elsewhere). */
  closeAll(): void;
}

const POSITION = /^\d{1,15}$/;

/**
 * Fans the live log out to this replica's subscribers (docs/adr/0028-live-updates.md). Every message is
 * decided per subscriber by rules.md §4.2's rule (protocol `visibleTo`) with the caller's session as
 * it is now (read from Redis per batch, as a request reads it): a revoked or deleted account's stream
 * ends, a changed role changes the filter. Resume reads the log from the client's Last-Event-ID.
 */
export function createLiveHub(options: LiveHubOptions): LiveHub {
  const { log, logger } = options;
  const maxBuffered = options.maxBufferedBytes ?? 1024 * 1024;
  const maxPending = options.maxPending ?? 10_000;
  const catchUpIdleMs = options.catchUpIdleMs ?? 500;
  const retryMs = options.retryMs ?? 2000;
  const subscribers = new Set<Subscriber>();
  const seen = new SeenIds();
  let positionTimer: NodeJS.Timeout | undefined;

  function drop(s: Subscriber, reason: string, abrupt = false): void {
    if (!subscribers.delete(s)) return;
    s.abort.abort();
    clearTimeout(s.expiry);
    logger.debug({ reason, userId: s.identity.caller?.userId ?? null }, "live stream ended");
    s.connection.end(abrupt);
  }

  function write(s: Subscriber, message: Outbound): void {
    if (!subscribers.has(s)) return;
    const buffered = s.connection.write(message);
    if (message.id !== undefined) s.sentId = Number(message.id);
    if (buffered > maxBuffered) drop(s, "slow", true);
  }

  /** The session of every signed-in subscriber among `of`, read once per user; a failed read refuses. */
  async function sessionsOf(of: Iterable<Subscriber>): Promise<Map<number, SessionState | null>> {
    const users = new Set<number>();
    for (const s of of) if (s.identity.caller) users.add(s.identity.caller.userId);
    const states = new Map<number, SessionState | null>();
    await Promise.all(
      [...users].map(async (userId) => {
        states.set(userId, await options.sessions.get(userId).catch(() => null));
      }),
    );
    return states;
  }

  /** Sends `batch` to `s` in order; answers false when the stream ended. */
  function deliver(s: Subscriber, batch: Prepared[], session: SessionState | null | undefined): boolean {
    const caller = s.identity.caller;
    let refused = false;
    if (caller) {
      // A session that cannot be read fails closed: the stream ends and resumes later, losing nothing.
      // Undefined: not read, as a batch with nothing to show (duplicates only) needs no session.
      refused =
        session === null ||
        (session !== undefined && sessionError(session, s.identity.tokenVersion) !== null);
      // The role as a request with the same token would act with now (protocol `roleInSession`).
      if (!refused && session) caller.role = roleInSession(session, caller.role);
    }
    let told = false;
    for (const p of batch) {
      if (p.offset <= s.position) continue;
      s.position = p.offset;
      let message: Outbound | null = null;
      if (p.kind === "role" && caller?.userId === p.userId) {
        message = { id: String(p.offset), event: "role", data: p.data };
        told = true;
        // The event may arrive before the session read shows the revocation (the outbox relay can beat
        // users' session update): the event itself says the stream's token is revoked.
        if (p.revokesBelow !== null && s.identity.tokenVersion < p.revokesBelow) refused = true;
      } else if (refused) continue;
      else if (p.kind === "project") message = projectMessageFor(caller, p);
      else if (p.kind === "invitation" && caller?.userId === p.userId) {
        message = { id: String(p.offset), event: "invitation", data: p.data };
      } else if (p.kind === "user-deleted" && caller?.userId === p.userId) refused = true;
      if (message) write(s, message);
    }
    if (refused) {
      // The session changed before its event arrived (other events came first): say why all the same.
      const role = session?.deleted ? null : session?.role;
      if (caller && session && !told && role !== caller.role) {
        write(s, { event: "role", data: JSON.stringify({ role, previousRole: caller.role }) });
      }
      drop(s, "session refused");
    }
    return subscribers.has(s);
  }

  const needsSession = (batch: Prepared[]) => batch.some((p) => p.kind !== "none");

  async function fanOut(entries: LiveEntry[]): Promise<void> {
    if (subscribers.size === 0) {
      for (const e of entries) seen.first(e.messageId);
      return;
    }
    let batch: Prepared[];
    try {
      batch = await prepare(entries, options.views, seen);
    } catch (error) {
      // Projects cannot be read now: every stream ends and resumes from its position, losing nothing.
      logger.warn({ err: error }, "live batch not prepared: streams end to resume");
      for (const s of [...subscribers]) drop(s, "unprepared");
      return;
    }
    const live = [...subscribers].filter((s) => s.pending === null);
    const states = needsSession(batch) ? await sessionsOf(live) : new Map();
    for (const s of subscribers) {
      if (s.pending !== null) {
        s.pending.push(...batch);
        if (s.pending.length > maxPending) drop(s, "slow while resuming", true);
        continue;
      }
      deliver(s, batch, s.identity.caller ? states.get(s.identity.caller.userId) : undefined);
    }
  }

  function reset(s: Subscriber, reason: string): void {
    const at = log.position;
    s.position = at ?? -1;
    write(s, {
      ...(at === null ? {} : { id: String(at) }),
      event: "reset",
      data: JSON.stringify({ reason }),
    });
  }

  /** Sends what `s` missed after `from`, then what arrived meanwhile, then goes live. */
  async function catchUp(s: Subscriber, from: number): Promise<void> {
    let verified = false;
    const own = new SeenIds(1000);
    await log.read(
      from,
      async (entries) => {
        const after: LiveEntry[] = [];
        for (const e of entries) {
          if (!verified) {
            if (e.offset < from) continue;
            if (e.offset !== from) return false;
            verified = true;
            continue;
          }
          if (e.offset > s.position) after.push(e);
        }
        if (after.length > 0) {
          const batch = await prepare(after, options.views, own);
          const states = needsSession(batch) ? await sessionsOf([s]) : new Map();
          if (!deliver(s, batch, s.identity.caller ? states.get(s.identity.caller.userId) : undefined))
            return false;
        }
        const end = log.position;
        return !(end !== null && s.position >= end);
      },
      { signal: s.abort.signal, idleMs: catchUpIdleMs },
    );
    if (!subscribers.has(s)) return;
    if (!verified) reset(s, "unknown or expired position");
    const pending = s.pending ?? [];
    s.pending = null;
    if (pending.length > 0) {
      const states = needsSession(pending) ? await sessionsOf([s]) : new Map();
      deliver(s, pending, s.identity.caller ? states.get(s.identity.caller.userId) : undefined);
    }
  }

  function sendPositions(): void {
    for (const s of subscribers) {
      if (s.pending === null && s.position > s.sentId) write(s, { id: String(s.position) });
    }
  }

  return {
    async start() {
      await log.start(fanOut);
      positionTimer = setInterval(sendPositions, options.positionEveryMs ?? 15_000);
      positionTimer.unref();
    },

    subscribe(identity, connection, lastEventId) {
      const s: Subscriber = {
        identity,
        connection,
        position: log.position ?? -1,
        sentId: -1,
        pending: null,
        abort: new AbortController(),
        expiry: undefined,
      };
      subscribers.add(s);
      if (identity.expiresAt !== null) {
        // (A timer longer than 2^31 - 1 ms would fire at once.)
        const left = Math.min(Math.max(0, identity.expiresAt - Date.now()), 2 ** 31 - 1);
        s.expiry = setTimeout(() => drop(s, "token expired"), left);
        s.expiry.unref();
      }
      const detach = () => drop(s, "closed");
      if (lastEventId === undefined || lastEventId === "") {
        write(s, { ...(s.position < 0 ? {} : { id: String(s.position) }), retry: retryMs });
        return detach;
      }
      write(s, { retry: retryMs });
      if (!POSITION.test(lastEventId)) {
        reset(s, "unknown position");
        return detach;
      }
      const from = Number(lastEventId);
      const end = log.position;
      if (end !== null && from > end) {
        reset(s, "unknown position");
        return detach;
      }
      s.position = from;
      s.pending = [];
      catchUp(s, from).catch((error: unknown) => {
        logger.warn({ err: error }, "live stream could not resume: it ends to resume again");
        drop(s, "resume failed");
      });
      return detach;
    },

    broadcast(message) {
      for (const s of subscribers) if (s.pending === null) write(s, message);
    },

    get size() {
      return subscribers.size;
    },

    closeAll() {
      clearInterval(positionTimer);
      for (const s of [...subscribers]) drop(s, "shutdown");
    },
  };
}
