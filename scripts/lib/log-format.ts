import { stripVTControlCharacters, styleText } from "node:util";
import { isColorSupported, prettyFactory } from "pino-pretty";

/**
 * How `pnpm start` prints the services' logs. The services always write JSON lines (one per event, what
 * log collectors read); the start script reads each child's lines and, for a person at a terminal,
 * prints each event as one readable line with its service's name (pino-pretty).
 */
export type LogFormat = "json" | "pretty";

/** `LOG_FORMAT`: `json`, `pretty`, or unset: pretty on a terminal, JSON otherwise (pipes, files, CI). */
export function chooseLogFormat(value: string | undefined, isTTY: boolean): LogFormat {
  const wanted = value?.trim().toLowerCase() ?? "";
  if (wanted === "") return isTTY ? "pretty" : "json";
  if (wanted === "json" || wanted === "pretty") return wanted;
  throw new Error(
    `LOG_FORMAT must be json or pretty (unset: pretty on a terminal, JSON otherwise), not ${JSON.stringify(value)}`,
  );
}

/** One line of a child's output as it is printed, without its line break. */
export type LineFormatter = (line: string) => string;

export interface FormatterOptions {
  format: LogFormat;
  /** The process the lines come from; a line's own `service` field wins. */
  service: string;
  /** Service names are padded to this width, so that the messages line up. */
  width?: number;
  /** ANSI colours; by default when the terminal supports them (NO_COLOR, FORCE_COLOR respected). */
  colorize?: boolean;
}

const LEVEL_WIDTH = 5;

/** `json` passes lines through untouched; `pretty` turns each JSON line into one readable line. */
export function createLineFormatter(options: FormatterOptions): LineFormatter {
  if (options.format === "json") return (line) => line;
  const width = options.width ?? 0;
  const colorize = options.colorize ?? isColorSupported;
  const pretty = prettyFactory({
    colorize,
    singleLine: true,
    translateTime: "SYS:HH:MM:ss.l",
    ignore: "pid,hostname,service",
    messageFormat: (log, messageKey, _level, { colors }) => {
      const service = typeof log.service === "string" ? log.service : options.service;
      const message = log[messageKey];
      return `${colors.magenta(service.padEnd(width))} ${typeof message === "string" ? message : ""}`;
    },
    customPrettifiers: {
      // Right-aligned, so that `INFO`, `WARN` and `ERROR` end in the same column.
      level: (_value, _key, _log, { labelColorized }) =>
        " ".repeat(Math.max(0, LEVEL_WIDTH - stripVTControlCharacters(labelColorized).length)) +
        labelColorized,
      // An error's stack, indented under its event, instead of the error object as JSON.
      err: (value) =>
        typeof value === "object" && value !== null && "stack" in value && typeof value.stack === "string"
          ? value.stack
          : JSON.stringify(value),
    },
  });
  const padded = options.service.padEnd(width);
  const name = colorize ? styleText("magenta", padded, { validateStream: false }) : padded;
  // Not JSON (a stray print): as it is, after the name of the process it came from.
  return (line) =>
    line.startsWith("{")
      ? pretty(line)
          .replace(/ *\r?\n$/, "")
          .replace(/ +\n/g, "\n")
      : `${name} ${line}`;
}
