import { parseArgs } from "node:util";
import { isMessageKind, MESSAGE_KINDS } from "@fundraise/bus";
import { parseFrom } from "../records.ts";
import type { ReplayOptions } from "../replay.ts";

export const USAGE = `Reads the bus journal (stream queue bus.journal) and prints or re-publishes messages.

Usage: pnpm replay -- [options]

  --url <amqp url>        broker and vhost (default: $AMQP_URL or amqp://guest:guest@127.0.0.1:5672)
  --from <position>       first | last | next | <offset> | offset:<n> | <ISO time>   (default: first)
  --key <pattern>         routing-key filter, topic syntax: * one word, # zero or more (e.g. users.#)
  --type <kind>           event | rpc-request | rpc-reply
  --limit <n>             stop after n matching messages
  --follow                keep reading new messages (Ctrl-C to stop); otherwise stop when idle
  --idle-ms <ms>          idle time that ends a non-follow read (default: 1000)
  --print                 print one JSON line per matching message (default unless --republish)
  --republish             re-publish matches: events to the events exchange with their routing key
  --to-queue <queue>      re-publish to this queue instead (default exchange), any kind
  --fresh-ids             give re-published messages new message ids (idempotent consumers redo them)
  --include-replayed      also re-publish messages that are themselves replays
  --dry-run               with --republish: show what would be re-published, publish nothing
  --help                  this text
`;

export function parseCli(argv: string[]): ReplayOptions & { print: boolean } {
  // pnpm forwards a literal "--" in some versions; it is not an argument.
  const args = argv[0] === "--" ? argv.slice(1) : argv;
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      url: { type: "string" },
      from: { type: "string" },
      key: { type: "string" },
      type: { type: "string" },
      limit: { type: "string" },
      follow: { type: "boolean" },
      "idle-ms": { type: "string" },
      print: { type: "boolean" },
      republish: { type: "boolean" },
      "to-queue": { type: "string" },
      "fresh-ids": { type: "boolean" },
      "include-replayed": { type: "boolean" },
      "dry-run": { type: "boolean" },
      help: { type: "boolean" },
    },
  });
  if (values.help) throw new UsageError("");
  let fromText = values.from;
  // `--from offset 42`: the number arrives as a positional.
  if (fromText === "offset" && positionals.length > 0) fromText = `offset:${positionals.shift()}`;
  if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals.join(" ")}`);
  if (values.type !== undefined && !isMessageKind(values.type)) {
    throw new UsageError(`--type must be one of ${MESSAGE_KINDS.join(", ")}`);
  }
  const positive = (name: string, text: string | undefined): number | undefined => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`${name} must be a positive integer`);
    return n;
  };
  if (values["to-queue"] !== undefined && !values.republish)
    throw new UsageError("--to-queue needs --republish");
  if (values["dry-run"] && !values.republish) throw new UsageError("--dry-run needs --republish");
  let from: ReplayOptions["from"];
  try {
    from = fromText === undefined ? "first" : parseFrom(fromText);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const limit = positive("--limit", values.limit);
  const idleMs = positive("--idle-ms", values["idle-ms"]);
  return {
    url: values.url ?? process.env.AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672",
    from,
    ...(values.key !== undefined ? { key: values.key } : {}),
    ...(values.type !== undefined && isMessageKind(values.type) ? { kind: values.type } : {}),
    ...(limit !== undefined ? { limit } : {}),
    ...(idleMs !== undefined ? { idleMs } : {}),
    follow: values.follow ?? false,
    republish: values.republish ?? false,
    ...(values["to-queue"] !== undefined ? { toQueue: values["to-queue"] } : {}),
    freshIds: values["fresh-ids"] ?? false,
    includeReplayed: values["include-replayed"] ?? false,
    dryRun: values["dry-run"] ?? false,
    print: values.print ?? !values.republish,
  };
}

export class UsageError extends Error {}
