import pino, { type Logger } from "pino";

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

/** One JSON line per event, `service` on every line, errors under `err` with their cause chain. */
export function createLogger(options: { service: string; level?: string }): Logger {
  return pino({
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
