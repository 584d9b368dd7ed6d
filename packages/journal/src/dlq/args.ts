import { parseArgs } from "node:util";
import { DEFAULT_URL } from "./broker.ts";
import { InputError } from "./errors.ts";
import type { RedriveFilter } from "./message.ts";

export const USAGE = `Dead letters of the bus: list the dead-letter queues, show their messages, move them back.

Usage: pnpm dlq [list] [--nonempty] [--queue <dlq>]... [--json]
       pnpm dlq -- show <queue> [--limit <n>] [--payload] [--json]
       pnpm dlq -- redrive <queue> [--id <messageId>] [--request <requestId>] [--error <text>]
                                   [--limit <n>] [--dry-run] [--json]

  list      every dead-letter queue any subscription announced (stream bus.subscriptions), consumers
            long gone too: consumer, event, service, depth (messages ready), age of the oldest message,
            or "gone" when the queue no longer exists
              --nonempty         only queues holding messages
              --queue <dlq>      also this queue (repeatable), announced or not
  show      the first messages of a dead-letter queue, head first, left in place and in order: message
            id, event, request id, attempts, last error (kind, code, message), when it was
            dead-lettered, its original queue and delivery count
              --limit <n>        how many (default 20)
              --payload          with the decoded JSON body
  redrive   moves dead letters back to their original queue, each in a transaction of its own (a crash
            loses none and delivers none twice), as a first attempt again; the others stay in order.
            One line per message moved, then {"matched","moved","returned"} on stderr.
              --id <messageId>   only this message
              --request <id>     only messages of this request (x-request-id)
              --error <text>     only messages whose last error contains this text (any case)
              --limit <n>        at most n messages
              --dry-run          print which messages would move where; move nothing

  <queue>   a dead-letter queue (<consumer>.<event>.dlq) or its main queue (<consumer>.<event>)

  --url <amqp url>   broker and vhost (default: $AMQP_URL or ${DEFAULT_URL})
  --json             JSON lines instead of text
  --help             this text

Exit codes: 0 done, 1 broker unreachable or failed, 2 bad input (one line on stderr names it).

list and show read a whole DLQ (up to 65,535 messages) and give it back, in order, by closing their
channel; each read adds 1 to the messages' x-delivery-count on a quorum queue. RabbitMQ 3.x sets a DLQ
no delivery limit; 4.0+ gives every quorum queue a default one (20) which 4.0-4.2 may count such reads
against: there a message read that often is dropped.

Examples:
  pnpm dlq                                                all dead-letter queues
  pnpm dlq -- --nonempty --json                           those holding messages, as JSON lines
  pnpm dlq -- show projects.users.deleted --payload       its first 20 dead letters, with their bodies
  pnpm dlq -- redrive projects.users.deleted.dlq --dry-run
  pnpm dlq -- redrive projects.users.deleted --error timeout
  pnpm dlq -- redrive projects.users.deleted --id 0192f0c4-8d1e-7c3a-9b7e-2f6d1a0b4c55
  AMQP_URL=amqp://ops:secret@rabbit:5672/prod pnpm dlq -- --nonempty
`;

export type Command =
  | { name: "help" }
  | { name: "list"; url: string; json: boolean; nonempty: boolean; queues: string[] }
  | { name: "show"; url: string; json: boolean; queue: string; limit: number; payload: boolean }
  | {
      name: "redrive";
      url: string;
      json: boolean;
      queue: string;
      filter: RedriveFilter;
      limit: number | undefined;
      dryRun: boolean;
    };

const OPTIONS = {
  url: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean" },
  nonempty: { type: "boolean" },
  queue: { type: "string", multiple: true },
  limit: { type: "string" },
  payload: { type: "boolean" },
  id: { type: "string" },
  request: { type: "string" },
  error: { type: "string" },
  "dry-run": { type: "boolean" },
} as const;
type OptionName = keyof typeof OPTIONS;

/** The options each subcommand takes besides url, json and help. */
const OWN_OPTIONS: Record<"list" | "show" | "redrive", OptionName[]> = {
  list: ["nonempty", "queue"],
  show: ["limit", "payload"],
  redrive: ["id", "request", "error", "limit", "dry-run"],
};

/** The command line as a command; an InputError names what is wrong with it. */
export function parseCommand(argv: string[], env: NodeJS.ProcessEnv = process.env): Command {
  // pnpm forwards a literal "--" in some versions; after it parseArgs would take every option as text.
  const args = argv[0] === "--" ? argv.slice(1) : argv;
  const { values, positionals } = parse(args);
  if (values.help || positionals[0] === "help") return { name: "help" };
  const [name = "list", ...rest] = positionals;
  if (name !== "list" && name !== "show" && name !== "redrive") {
    throw new InputError(`unknown subcommand "${name}" (list, show, redrive; see --help)`);
  }
  for (const option of Object.keys(values) as OptionName[]) {
    if (!["url", "json", "help", ...OWN_OPTIONS[name]].includes(option)) {
      throw new InputError(`--${option} is not an option of ${name}`);
    }
  }
  const common = { url: values.url ?? env.AMQP_URL ?? DEFAULT_URL, json: values.json ?? false };
  if (name === "list") {
    if (rest.length > 0) throw new InputError(`unexpected argument "${rest[0]}" (list takes none)`);
    return { name, ...common, nonempty: values.nonempty ?? false, queues: values.queue ?? [] };
  }
  const [queue, extra] = rest;
  if (queue === undefined || queue === "")
    throw new InputError(`${name} needs a queue: pnpm dlq -- ${name} <queue>`);
  if (extra !== undefined) throw new InputError(`unexpected argument "${extra}" (${name} takes one queue)`);
  if (name === "show") {
    return { name, ...common, queue, limit: positive(values.limit) ?? 20, payload: values.payload ?? false };
  }
  const filter: RedriveFilter = {};
  if (values.id !== undefined) filter.id = values.id;
  if (values.request !== undefined) filter.request = values.request;
  if (values.error !== undefined) filter.error = values.error;
  return {
    name,
    ...common,
    queue,
    filter,
    limit: positive(values.limit),
    dryRun: values["dry-run"] ?? false,
  };
}

function parse(args: string[]) {
  try {
    return parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    // Node's messages run to three sentences; the option is what matters.
    const text = error instanceof Error ? error.message : String(error);
    const option = /'(-[^' ]*)/.exec(text)?.[1];
    const code = (error as { code?: unknown }).code;
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") throw new InputError(`unknown option ${option ?? text}`);
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
      const what = option ?? "an option";
      if (what === "--limit") throw new InputError("--limit must be a positive integer");
      if (text.includes("does not take")) throw new InputError(`${what} takes no value`);
      if (text.includes("ambiguous"))
        throw new InputError(`${what} needs a value; for one starting with "-": ${what}=<value>`);
      throw new InputError(`${what} needs a value`);
    }
    throw new InputError(text.split("\n")[0] ?? text);
  }
}

function positive(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n < 1) {
    throw new InputError(`--limit must be a positive integer, not "${text}"`);
  }
  return n;
}
