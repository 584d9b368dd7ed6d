import { AppError, type Envelope, ErrorCode, isErrorKind } from "@fundraise/protocol";

/** Header names on the wire. Lower-case, `x-` for ours, W3C's own name for trace context. */
export const Header = {
  REQUEST_ID: "x-request-id",
  DEADLINE: "x-deadline",
  TRACEPARENT: "traceparent",
  /** event | rpc-request | rpc-reply: tells journal readers what a message was. */
  KIND: "x-bus-kind",
  PUBLISHED_BY: "x-published-by",
  ERROR_KIND: "x-error-kind",
  ERROR_CODE: "x-error-code",
  ERROR_DETAILS: "x-error-details",
  /** Delivery attempt of an event, 1-based, carried through the retry queues. */
  ATTEMPT: "x-attempt",
  LAST_ERROR: "x-last-error",
  LAST_ERROR_KIND: "x-last-error-kind",
  LAST_ERROR_CODE: "x-last-error-code",
  DEAD_LETTERED_AT: "x-dead-lettered-at",
  ORIGINAL_QUEUE: "x-original-queue",
  ORIGINAL_ROUTING_KEY: "x-original-routing-key",
  REPLAYED_FROM_OFFSET: "x-replayed-from-offset",
  /** A replayed message's journal position (`<offset>:<index>`), set by `pnpm replay -- --republish`. */
  REPLAYED_FROM: "x-replayed-from",
  /** A dead letter moved back by `pnpm dlq -- redrive`: the dead-letter queue it came from, and when (ms). */
  REDRIVEN_FROM: "x-redriven-from",
  REDRIVEN_AT: "x-redriven-at",
  STREAM_OFFSET: "x-stream-offset",
  /** A keyed write's Idempotency-Key, named with its caller (rpc-answers.ts). */
  IDEMPOTENCY_KEY: "x-idempotency-key",
  /** What the keyed request asked: another request under the same key is refused. */
  REQUEST_FINGERPRINT: "x-request-fingerprint",
  /** On a reply: the first answer a service kept for the request's key, sent again (rpc-answers.ts). */
  REPLAYED: "x-replayed",
} as const;

export const MESSAGE_KINDS = ["event", "rpc-request", "rpc-reply"] as const;
export type MessageKind = (typeof MESSAGE_KINDS)[number];

export function isMessageKind(value: unknown): value is MessageKind {
  return typeof value === "string" && (MESSAGE_KINDS as readonly string[]).includes(value);
}

export type Headers = Record<string, unknown>;

/** AMQP tables cannot hold `undefined`; drop such entries instead of failing the publish. */
export function compactHeaders(headers: Headers): Headers {
  const out: Headers = {};
  for (const [key, value] of Object.entries(headers)) if (value !== undefined) out[key] = value;
  return out;
}

// Broker-managed headers: copying them onto a republished message would make it lie about its history.
const BROKER_HEADERS = new Set([
  "x-death",
  "x-first-death-exchange",
  "x-first-death-queue",
  "x-first-death-reason",
  "x-last-death-exchange",
  "x-last-death-queue",
  "x-last-death-reason",
  "x-delivery-count",
  Header.STREAM_OFFSET,
]);

/** Headers of a received message worth carrying to a copy of it (retry, dead letter, replay). */
export function carriedHeaders(headers: Headers | undefined): Headers {
  const out: Headers = {};
  for (const [key, value] of Object.entries(headers ?? {})) {
    if (!BROKER_HEADERS.has(key) && value !== undefined) out[key] = value;
  }
  return out;
}

export function stringHeader(headers: Headers | undefined, name: string): string | undefined {
  const value = headers?.[name];
  if (typeof value === "string") return value;
  if (Buffer.isBuffer(value)) return value.toString("utf8");
  return undefined;
}

export function numberHeader(headers: Headers | undefined, name: string): number | undefined {
  const value = headers?.[name];
  if (typeof value === "number" && Number.isFinite(value)) return value;
  if (typeof value === "bigint") return Number(value);
  if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value)))
    return Number(value);
  return undefined;
}

// Headers share the frame with the other properties (frame_max 128 KiB); details beyond this are cut.
const MAX_DETAILS_BYTES = 16 * 1024;

export interface ReplyParts {
  envelope: Envelope<unknown>;
  headers: Headers;
}

export function successReply(data: unknown, message: string | null = null): ReplyParts {
  return { envelope: { data, success: true, message }, headers: {} };
}

/** An AppError as a reply: the envelope carries the message, headers carry kind, code and details. */
export function errorReply(error: AppError): ReplyParts {
  const headers: Headers = { [Header.ERROR_KIND]: error.kind, [Header.ERROR_CODE]: error.code };
  if (error.details !== undefined) {
    const details = safeJson(error.details);
    if (details !== undefined && Buffer.byteLength(details) <= MAX_DETAILS_BYTES) {
      headers[Header.ERROR_DETAILS] = details;
    }
  }
  return { envelope: { data: null, success: false, message: error.message }, headers };
}

function safeJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

/**
 * Reads a reply back: the data (and the envelope's message) on success, or the AppError the server raised (same kind, code, message,
 * details). A reply that is neither is an `internal` error: the two sides disagree on the protocol.
 */
export function readReply(
  envelope: unknown,
  headers: Headers | undefined,
): { data: unknown; message: string | null; replayed?: true } | { error: AppError } {
  const kind = stringHeader(headers, Header.ERROR_KIND);
  const body = isEnvelope(envelope) ? envelope : undefined;
  if (kind !== undefined || body?.success === false) {
    const code = stringHeader(headers, Header.ERROR_CODE) ?? ErrorCode.INTERNAL;
    const rawDetails = stringHeader(headers, Header.ERROR_DETAILS);
    let details: unknown;
    if (rawDetails !== undefined) {
      try {
        details = JSON.parse(rawDetails);
      } catch {
        details = undefined;
      }
    }
    const message = body?.message ?? "An unexpected error occurred.";
    return {
      error: new AppError(
        isErrorKind(kind) ? kind : "internal",
        code,
        message,
        details === undefined ? {} : { details },
      ),
    };
  }
  if (!body) {
    return { error: new AppError("internal", ErrorCode.INTERNAL, "The reply is not a response envelope.") };
  }
  return {
    data: body.data,
    message: typeof body.message === "string" ? body.message : null,
    ...(stringHeader(headers, Header.REPLAYED) === undefined ? {} : { replayed: true as const }),
  };
}

function isEnvelope(value: unknown): value is Envelope<unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    "success" in value &&
    typeof (value as { success: unknown }).success === "boolean" &&
    "data" in value
  );
}

/** AMQP timestamps are POSIX seconds. */
export function amqpTimestamp(ms: number = Date.now()): number {
  return Math.floor(ms / 1000);
}
