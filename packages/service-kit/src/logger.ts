import { trace } from "@opentelemetry/api";
import pino, { type Logger } from "pino";
import { tracingStarted } from "./telemetry-env.ts";

export type { Logger } from "pino";

/** Paths that may carry secrets; pino replaces their values before a line is written. */
const REDACT = [
  "password",
  "token",
  "authorization",
  "signedMessage",
  "privateKey",
  "*.password",
  "*.token",
  "*.authorization",
  "*.signedMessage",
  "*.privateKey",
  "req.headers.authorization",
  "req.headers.cookie",
  "headers.authorization",
];

/** The active span's ids, on every line written inside one (tracing on only). */
function traceIds(): Record<string, string> {
  const span = trace.getActiveSpan()?.spanContext();
  return span ? { trace_id: span.traceId, span_id: span.spanId } : {};
}

/**
 * One JSON line per event, `service` on every line, errors under `err` with their cause chain; with
 * tracing on, `trace_id` and `span_id` on the lines written inside a span.
 */
export function createLogger(options: { service: string; level?: string }): Logger {
  return pino({
    ...(tracingStarted() ? { mixin: traceIds } : {}),
    level: options.level ?? "info",
    base: { service: options.service },
    redact: { paths: REDACT, censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    serializers: { err: pino.stdSerializers.errWithCause },
  });
}

/** A logger that writes nothing, for tests. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
