import { isAppError } from "@fundraise/protocol";
import type { Logger } from "pino";

/**
 * What a process logs while a server it needs (the broker, the database, Redis) does not answer: one line
 * when the first attempt fails, then at most one line per growing interval (by default once 1 s, 5 s,
 * 30 s and 60 s have passed since the first failure, then once a minute), each with the attempts so far,
 * and one info line once it connects. A refused, unreachable or timed-out connection is an outage, not a
 * bug: its lines carry the reason only. Anything else keeps its `err` (with its stack). No line names a
 * password: the URL is redacted and the password is cut out of an error's message and stack.
 */
export interface WaitingLog {
  /** One failed attempt; logs when a line is due, with `context` (what waits: a row, a request). */
  failed(error: unknown, context?: Record<string, unknown>): void;
  /**
   * Connected: one info line, "connected to … again after N attempts, X s", when attempts had failed
   * since the last success; returns whether it logged (false: nothing had failed, the caller says it).
   */
  connected(): boolean;
  /** Stops waiting without a line (the process stops while it waits). */
  abandon(): void;
  /** Whether an attempt failed since the last success. */
  readonly waiting: boolean;
  /** Failed attempts since the last success. */
  readonly attempts: number;
}

export interface WaitingLogOptions {
  log: Logger;
  /** What is waited for, as the lines name it: "the message broker", "the database", "Redis". */
  what: string;
  /** Where it is; logged without its password. */
  url?: string;
  /** When, after the first failure, a further line is due (default 1 s, 5 s, 30 s, 60 s) … */
  scheduleMs?: readonly number[];
  /** … and then every `everyMs` (default one minute). */
  everyMs?: number;
  /**
   * Level of the lines of an outage (default "warn"; unexpected failures are always warn): "debug" for a
   * second client of a server another client of the process already reports on (the gateway's live log
   * beside its bus).
   */
  outageLevel?: "warn" | "debug";
  /** Called when waiting starts (true) and ends (false): readiness can say what a process waits for. */
  onWaiting?: (waiting: boolean) => void;
  now?: () => number;
}

const DEFAULT_SCHEDULE_MS = [1_000, 5_000, 30_000, 60_000];

/** Network failures of a connection attempt, by code: an outage, whatever the server. */
const NETWORK_CODES: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host not found (DNS lookup failed)",
  ETIMEDOUT: "no answer in time",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  EHOSTDOWN: "host down",
  ECONNRESET: "connection reset",
  ECONNABORTED: "connection aborted",
  EPIPE: "connection closed",
};

/**
 * Failures that mean "the server is not there (yet)" though they carry no network code: a client's own
 * connect timeout, a socket closed while the server starts or stops, a server that says it is starting.
 */
const OUTAGE_MESSAGES: { pattern: RegExp; reason: string }[] = [
  {
    pattern: /timeout exceeded when trying to connect|connection timeout|connect ETIMEDOUT/i,
    reason: "no answer in time",
  },
  {
    pattern: /Socket closed abruptly during opening handshake/i,
    reason: "connection closed during the handshake",
  },
  { pattern: /Connection terminated unexpectedly/i, reason: "connection closed" },
  { pattern: /is not queryable/i, reason: "connection lost" },
  { pattern: /the database system is (starting up|shutting down|in recovery mode)/i, reason: "" },
  { pattern: /^LOADING\b/, reason: "loading its data" },
  // ioredis, for a command while it has no connection.
  {
    pattern: /Stream isn't writeable|^Connection is closed|max retries per request limit/i,
    reason: "not connected",
  },
];
/** Postgres: cannot_connect_now, admin_shutdown, crash_shutdown. */
const OUTAGE_SQLSTATES = new Set(["57P03", "57P01", "57P02"]);

/**
 * The reason of a failure that only says the server is unreachable (a refused connection, a DNS failure,
 * a timeout, a reset, a server starting up, an `unavailable` AppError), in a few words; undefined for
 * anything else (logged with its stack).
 */
export function outageReason(error: unknown): string | undefined {
  if (isAppError(error)) return error.kind === "unavailable" ? error.message : undefined;
  if (typeof error !== "object" || error === null) return undefined;
  const { code, message, errors } = error as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof code === "string") {
    if (NETWORK_CODES[code]) return NETWORK_CODES[code];
    if (OUTAGE_SQLSTATES.has(code))
      return typeof message === "string" ? message : "not accepting connections";
  }
  if (typeof message === "string") {
    const networkCode = /\b(E[A-Z]+)\b/.exec(message)?.[1];
    if (networkCode && NETWORK_CODES[networkCode] && /^(connect|getaddrinfo|read|write)\b/.test(message)) {
      return NETWORK_CODES[networkCode];
    }
    for (const { pattern, reason } of OUTAGE_MESSAGES) if (pattern.test(message)) return reason || message;
  }
  // Node's happy-eyeballs connect (a name with several addresses) fails with all of them at once.
  if (Array.isArray(errors) && errors.length > 0) {
    const reasons = errors.map(outageReason);
    if (reasons.every((reason) => reason !== undefined)) return reasons[0];
  }
  // A client's own error around the network's (fetch's "fetch failed", a chain client's ChainRpcError).
  const { cause } = error as { cause?: unknown };
  if (cause !== undefined && cause !== error) return outageReason(cause);
  return undefined;
}

/** The URL without its password, for logs. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "<unparseable url>";
  }
}

/** The password of `url`, decoded, if it has one (to cut out of error texts). */
function passwordOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const password = decodeURIComponent(new URL(url).password);
    return password.length >= 3 ? password : undefined;
  } catch {
    return undefined;
  }
}

/** The error as pino's serializer would see it, with `secret` replaced in its message and stack. */
function withoutSecret(error: unknown, secret: string | undefined): unknown {
  if (!secret || !(error instanceof Error)) return error;
  const scrub = (text: string | undefined) => text?.split(secret).join("***");
  if (!error.message.includes(secret) && !error.stack?.includes(secret)) return error;
  const copy = Object.assign(Object.create(Object.getPrototypeOf(error)) as Error, error);
  copy.message = scrub(error.message) ?? "";
  copy.stack = scrub(error.stack);
  return copy;
}

/** Seconds with one decimal below a minute, whole seconds above. */
function seconds(ms: number): number {
  return ms < 60_000 ? Math.round(ms / 100) / 10 : Math.round(ms / 1000);
}

export function createWaitingLog(options: WaitingLogOptions): WaitingLog {
  const { log, what } = options;
  const now = options.now ?? Date.now;
  const schedule = options.scheduleMs ?? DEFAULT_SCHEDULE_MS;
  const every = options.everyMs ?? 60_000;
  const outageLevel = options.outageLevel ?? "warn";
  const url = options.url === undefined ? undefined : redactUrl(options.url);
  const secret = passwordOf(options.url);
  const where = url ? `${what} at ${url}` : what;
  let attempts = 0;
  let firstFailureAt = 0;
  let lines = 0;
  /** Index into the schedule (then beyond it, every `every`) of the next line that is due. */
  let next = 0;
  const dueAt = (index: number) =>
    index < schedule.length
      ? (schedule[index] as number)
      : (schedule.at(-1) ?? 0) + (index - schedule.length + 1) * every;

  return {
    get waiting() {
      return attempts > 0;
    },
    get attempts() {
      return attempts;
    },
    failed(error, context) {
      const at = now();
      if (attempts === 0) {
        firstFailureAt = at;
        lines = 0;
        next = 0;
        options.onWaiting?.(true);
      }
      attempts++;
      const elapsed = at - firstFailureAt;
      if (lines > 0 && elapsed < dueAt(next)) return;
      while (dueAt(next) <= elapsed) next++;
      lines++;
      const reason = outageReason(error);
      const fields: Record<string, unknown> = {
        ...context,
        ...(url ? { url } : {}),
        attempts,
        waitedSeconds: seconds(elapsed),
        ...(reason === undefined ? { err: withoutSecret(error, secret) } : { reason }),
      };
      const said = reason ?? (error instanceof Error ? error.message : String(error));
      const text = (secret ? said.split(secret).join("***") : said).split("\n")[0];
      const level = reason === undefined ? "warn" : outageLevel;
      if (lines === 1) log[level](fields, `waiting for ${where} — ${text}; retrying`);
      else
        log[level](
          fields,
          `still waiting for ${where} — ${text}; ${attempts} attempts in ${seconds(elapsed)} s; retrying`,
        );
    },
    connected() {
      if (attempts === 0) return false;
      const waited = now() - firstFailureAt;
      log[outageLevel === "warn" ? "info" : "debug"](
        { ...(url ? { url } : {}), attempts, waitedSeconds: seconds(waited) },
        `connected to ${what} again after ${attempts} failed ${attempts === 1 ? "attempt" : "attempts"}, ${seconds(waited)} s`,
      );
      attempts = 0;
      options.onWaiting?.(false);
      return true;
    },
    abandon() {
      if (attempts === 0) return;
      attempts = 0;
      options.onWaiting?.(false);
    },
  };
}
