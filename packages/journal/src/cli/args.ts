import { parseArgs } from "node:util";
import { isJournalKind, JOURNAL_KINDS } from "@fundraise/bus";
import { checkKey } from "../read/catalog.ts";
import { BadOptionError } from "../read/errors.ts";
import { checkOrder, type Position, parsePosition } from "../read/positions.ts";
import type { ReplayOptions } from "../replay.ts";
import { REQUEST_ID, TRACE_ID } from "../story/find.ts";

export { USAGE } from "../read/usage.ts";

export type CliCommand =
  | { mode: "help" }
  | {
      mode: "story";
      url: string;
      requestId?: string;
      traceId?: string;
      from?: Position;
      until?: Position;
      json: boolean;
    }
  | { mode: "read"; options: ReplayOptions; print: boolean; notes: string[] };

const OPTIONS = {
  url: { type: "string" },
  request: { type: "string" },
  trace: { type: "string" },
  from: { type: "string" },
  until: { type: "string" },
  key: { type: "string" },
  "any-key": { type: "boolean" },
  type: { type: "string" },
  limit: { type: "string" },
  follow: { type: "boolean" },
  "idle-ms": { type: "string" },
  json: { type: "boolean" },
  print: { type: "boolean" },
  republish: { type: "boolean" },
  "include-rpc": { type: "boolean" },
  "allow-writes": { type: "boolean" },
  "to-queue": { type: "string" },
  "dry-run": { type: "boolean" },
  "fresh-ids": { type: "boolean" },
  "include-replayed": { type: "boolean" },
  help: { type: "boolean" },
} as const;

type Values = ReturnType<typeof parse>["values"];

/** `--from -10m`: node's parser takes a value that starts with "-" for an option; a relative time is a value. */
function joinRelativeTimes(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const [arg, next] = [args[i]!, args[i + 1]];
    if ((arg === "--from" || arg === "--until") && next !== undefined && /^-\d+(ms|s|m|h|d)$/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

function parse(args: string[]) {
  try {
    return parseArgs({
      args: joinRelativeTimes(args),
      allowPositionals: true,
      strict: true,
      options: OPTIONS,
    });
  } catch (error) {
    throw new BadOptionError((error as Error).message.split("\n")[0]);
  }
}

/** The command line as a command; every bad value is a BadOptionError (exit 2) naming the problem in one line. */
export function parseCli(argv: string[], now: number = Date.now()): CliCommand {
  // pnpm forwards a literal "--" in some versions; it is not an argument.
  const { values, positionals } = parse(argv[0] === "--" ? argv.slice(1) : argv);
  if (values.help) return { mode: "help" };
  let fromText = values.from;
  // `--from offset 42`: the number arrives as a positional.
  if (fromText === "offset" && positionals.length > 0) fromText = `offset:${positionals.shift()}`;
  if (positionals.length > 0) throw new BadOptionError(`unexpected argument: ${positionals.join(" ")}`);
  checkConflicts(values);
  const from = fromText === undefined ? undefined : parsePosition(fromText, { option: "--from", now });
  const until =
    values.until === undefined ? undefined : parsePosition(values.until, { option: "--until", now });
  checkOrder(from, until);
  const url = values.url ?? process.env.AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672";
  if (values.request !== undefined || values.trace !== undefined) {
    return storyCommand(values, url, from, until);
  }
  return readCommand(values, url, from, until);
}

function storyCommand(values: Values, url: string, from?: Position, until?: Position): CliCommand {
  if (values.request !== undefined && !REQUEST_ID.test(values.request)) {
    throw new BadOptionError(
      `--request ${JSON.stringify(values.request)}: a request id is 1 to 128 letters, digits, "_", ".", ":" or "-"`,
    );
  }
  if (values.trace !== undefined && !TRACE_ID.test(values.trace)) {
    throw new BadOptionError(`--trace ${JSON.stringify(values.trace)}: a trace id is 32 hex digits`);
  }
  return {
    mode: "story",
    url,
    ...(values.request !== undefined ? { requestId: values.request } : {}),
    ...(values.trace !== undefined ? { traceId: values.trace.toLowerCase() } : {}),
    ...(from !== undefined ? { from } : {}),
    ...(until !== undefined ? { until } : {}),
    json: values.json ?? false,
  };
}

function readCommand(values: Values, url: string, from?: Position, until?: Position): CliCommand {
  if (values.type !== undefined && !isJournalKind(values.type)) {
    throw new BadOptionError(
      `--type ${JSON.stringify(values.type)}: expected one of ${JOURNAL_KINDS.join(", ")}`,
    );
  }
  if (values.key !== undefined && !values["any-key"]) checkKey(values.key);
  const limit = positive("--limit", values.limit);
  const notes: string[] = [];
  if (values["idle-ms"] !== undefined) {
    notes.push("--idle-ms is deprecated and ignored: a read ends at the journal's end as of the call");
  }
  const options: ReplayOptions = {
    url,
    ...(from !== undefined ? { from } : {}),
    ...(until !== undefined ? { until } : {}),
    ...(values.key !== undefined ? { key: values.key } : {}),
    ...(values.type !== undefined && isJournalKind(values.type) ? { kind: values.type } : {}),
    ...(limit !== undefined ? { limit } : {}),
    follow: values.follow ?? false,
    republish: values.republish ?? false,
    includeRpc: values["include-rpc"] ?? false,
    allowWrites: values["allow-writes"] ?? false,
    ...(values["to-queue"] !== undefined ? { toQueue: values["to-queue"] } : {}),
    dryRun: values["dry-run"] ?? false,
    freshIds: values["fresh-ids"] ?? false,
    includeReplayed: values["include-replayed"] ?? false,
  };
  return { mode: "read", options, print: values.print ?? !values.republish, notes };
}

/** Options that make no sense together, or without the one they qualify. */
function checkConflicts(values: Values): void {
  const story =
    values.request !== undefined ? "--request" : values.trace !== undefined ? "--trace" : undefined;
  if (values.request !== undefined && values.trace !== undefined) {
    throw new BadOptionError("--request and --trace: give one of them (a request's story, or a trace's)");
  }
  if (story) {
    for (const option of ["republish", "follow", "key", "type", "limit", "to-queue", "dry-run"] as const) {
      if (values[option] !== undefined && values[option] !== false) {
        throw new BadOptionError(
          `${story} cannot be combined with --${option}: a story shows every entry once`,
        );
      }
    }
  }
  if (!values.republish) {
    for (const option of [
      "to-queue",
      "dry-run",
      "include-rpc",
      "allow-writes",
      "fresh-ids",
      "include-replayed",
    ] as const) {
      if (values[option] !== undefined && values[option] !== false) {
        throw new BadOptionError(`--${option} needs --republish`);
      }
    }
  }
  if (values["allow-writes"] && !values["include-rpc"]) {
    throw new BadOptionError("--allow-writes needs --include-rpc: only RPC requests can be writes");
  }
}

function positive(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1)
    throw new BadOptionError(`${name} ${JSON.stringify(text)}: expected a positive integer`);
  return n;
}
