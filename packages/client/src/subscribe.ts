/**
 * Live updates: the gateway's Server-Sent Events stream (`GET /events`) read with `fetch` and
 * eventsource-parser, so that a token header can be sent (the browser's EventSource cannot) and the
 * same code runs in browsers and Node 22. Reconnects with backoff, resuming from the last id.
 */
import { createParser } from "eventsource-parser";
import { ApiError } from "./errors.ts";
import { STREAM_MESSAGE_TYPES, type StreamMessages, type StreamMessageType } from "./messages.ts";
import { retryAfterMs, sleep } from "./retry.ts";

/** What every handler gets besides the data: the message's `id:` (none on `chain` messages). */
export interface MessageMeta<K extends StreamMessageType = StreamMessageType> {
  type: K;
  id: string | undefined;
}

export type MessageHandlers = {
  [K in StreamMessageType]?: (data: StreamMessages[K], meta: MessageMeta<K>) => void;
};

export interface ReconnectInfo {
  /** Connections tried in a row that did not start a stream (0 after a stream that ran, then ended). */
  failures: number;
  /** How long until the next try, in ms. */
  delayMs: number;
  /** Why: a network error, an ApiError (5xx, 408, 429), or the stream having ended. */
  error: unknown;
}

export interface SubscribeHandlers extends MessageHandlers {
  /** A stream started (each time, reconnections included). */
  open?(): void;
  /**
   * Something the subscription cannot fix by itself. An ApiError (401, or another 4xx before the stream
   * started) means it has stopped; a message whose data is not JSON, or an exception thrown by a handler,
   * is reported here too and the stream goes on.
   */
  error?(error: unknown): void;
  /** A connection failed or ended; the next try follows in `delayMs`. */
  reconnecting?(info: ReconnectInfo): void;
}

export interface SubscribeOptions {
  /** The token for the stream; the client's own (`setToken`) when unset. */
  token?: string;
  /**
   * A ticket from `POST /events/ticket`, sent as `?ticket=` instead of a token. A ticket is good for one
   * connection: pass a function to get a fresh one for every connection, reconnections included.
   */
  ticket?: string | (() => string | Promise<string>);
  /** Resume after this id on the first connection (later ones send the last id seen). */
  lastEventId?: string;
  /** Aborting it closes the subscription, as `close()` does. */
  signal?: AbortSignal;
  /** The reconnection delay until the server's `retry:` sets one (ms); 1000 by default. */
  retryMs?: number;
  /** The longest delay between tries when they keep failing (ms); 30 000 by default. */
  maxRetryMs?: number;
  /** A stream silent for this long is taken as dead and reconnected (ms); 45 000 by default, 0 never. */
  idleTimeoutMs?: number;
}

export interface Subscription {
  /** Stops it: the open connection is aborted and no reconnection follows. */
  close(): void;
  /** Resolves once it has stopped (close, abort, or a final error). */
  readonly closed: Promise<void>;
  /** The last `id:` seen (sent as `Last-Event-ID` on the next connection). */
  readonly lastEventId: string | undefined;
}

/** What the stream takes from the client it belongs to. */
export interface StreamConfig {
  baseUrl: string;
  fetch: (request: Request) => Promise<Response>;
  headers: Record<string, string>;
  /** The client's token at the time of a connection. */
  token: () => string | undefined;
}

type Outcome =
  | { final: true; error: unknown }
  | { final: false; error: unknown; opened: boolean; after?: number };

/** Worth trying again: the server or the way to it failed, or asked to wait. */
const retryable = (status: number) => status >= 500 || status === 408 || status === 429;

const MAX_MESSAGE_CHARS = 4 * 1024 * 1024;

export function openStream(
  config: StreamConfig,
  handlers: SubscribeHandlers,
  options: SubscribeOptions = {},
): Subscription {
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) stop.abort();

  let lastEventId = options.lastEventId || undefined;
  let retryMs = options.retryMs ?? 1000;
  const maxRetryMs = options.maxRetryMs ?? 30_000;
  const idleTimeoutMs = options.idleTimeoutMs ?? 45_000;
  const report = (error: unknown) => {
    try {
      handlers.error?.(error);
    } catch {
      // The error handler's own failure has nowhere left to go.
    }
  };

  function dispatch(type: string | undefined, data: string, id: string | undefined): void {
    if (!type || !(STREAM_MESSAGE_TYPES as readonly string[]).includes(type)) return;
    const handler = handlers[type as StreamMessageType] as
      | ((data: unknown, meta: MessageMeta) => void)
      | undefined;
    if (!handler) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      report(new Error(`A "${type}" message${id ? ` (id ${id})` : ""} whose data is not JSON was skipped.`));
      return;
    }
    try {
      handler(parsed, { type: type as StreamMessageType, id });
    } catch (error) {
      report(error);
    }
  }

  async function connect(): Promise<Outcome> {
    const attempt = new AbortController();
    const abortAttempt = () => attempt.abort();
    stop.signal.addEventListener("abort", abortAttempt, { once: true });
    let opened = false;
    let idle: ReturnType<typeof setTimeout> | undefined;
    let idleExpired = false;
    const armIdle = () => {
      if (idleTimeoutMs <= 0) return;
      clearTimeout(idle);
      idle = setTimeout(() => {
        idleExpired = true;
        attempt.abort();
      }, idleTimeoutMs);
    };
    try {
      const url = new URL(`${config.baseUrl}/events`);
      const headers = new Headers(config.headers);
      headers.set("accept", "text/event-stream");
      const ticket = typeof options.ticket === "function" ? await options.ticket() : options.ticket;
      if (ticket) {
        url.searchParams.set("ticket", ticket);
      } else {
        const token = options.token ?? config.token();
        if (token) headers.set("authorization", `Bearer ${token}`);
      }
      if (lastEventId) headers.set("last-event-id", lastEventId);
      const response = await config.fetch(new Request(url, { headers, signal: attempt.signal }));
      if (!response.ok) {
        const error = await ApiError.from(response);
        if (!retryable(response.status)) return { final: true, error };
        const after = retryAfterMs(response);
        return { final: false, error, opened, ...(after === undefined ? {} : { after }) };
      }
      const type = response.headers.get("content-type") ?? "";
      if (!response.body || !type.toLowerCase().startsWith("text/event-stream")) {
        await response.body?.cancel().catch(() => {});
        return {
          final: true,
          error: new ApiError(
            response.status,
            `GET /events answered ${type || "no content type"}, not a stream.`,
          ),
        };
      }
      opened = true;
      try {
        handlers.open?.();
      } catch (error) {
        report(error);
      }
      const parser = createParser({
        maxBufferSize: MAX_MESSAGE_CHARS,
        // Every id, a data-less heartbeat's too; an empty one clears it (the spec's last event ID).
        onId: (id) => {
          lastEventId = id || undefined;
        },
        onRetry: (ms) => {
          retryMs = ms;
        },
        onEvent: (message) => dispatch(message.event, message.data, message.id),
        onError: (error) => {
          if (error.type === "max-buffer-size-exceeded") attempt.abort(error);
        },
      });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      armIdle();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        armIdle();
        parser.feed(value);
      }
      return { final: false, error: new Error("The stream ended."), opened };
    } catch (error) {
      if (error instanceof ApiError && !retryable(error.status)) return { final: true, error };
      const why = idleExpired ? new Error(`No data for ${idleTimeoutMs} ms.`) : error;
      return { final: false, error: why, opened };
    } finally {
      clearTimeout(idle);
      stop.signal.removeEventListener("abort", abortAttempt);
      attempt.abort();
    }
  }

  const closed = (async () => {
    let failures = 0;
    try {
      while (!stop.signal.aborted) {
        const outcome = await connect();
        if (stop.signal.aborted) break;
        if (outcome.final) {
          report(outcome.error);
          break;
        }
        failures = outcome.opened ? 0 : failures + 1;
        // The server's delay after a stream that ran; doubling while tries fail; up to 10% more at random
        // so that clients dropped together do not all come back at once.
        const backoff = Math.min(maxRetryMs, retryMs * 2 ** Math.max(0, failures - 1));
        const delayMs = Math.round(Math.max(outcome.after ?? 0, backoff * (1 + Math.random() * 0.1)));
        try {
          handlers.reconnecting?.({ failures, delayMs, error: outcome.error });
        } catch (error) {
          report(error);
        }
        await sleep(delayMs, stop.signal);
      }
    } finally {
      options.signal?.removeEventListener("abort", onAbort);
    }
  })();

  return {
    close: () => stop.abort(),
    closed,
    get lastEventId() {
      return lastEventId;
    },
  };
}
