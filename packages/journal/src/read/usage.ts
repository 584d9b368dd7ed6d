/** `pnpm replay -- --help`: every option, with examples. */
export const USAGE = `Reads the bus journal (streams bus.journal and bus.journal.late): a request's story, entries by
time or position, and safe re-publishing.

Usage: pnpm replay -- --request <id> | --trace <id> [--json]
       pnpm replay -- [--from <pos>] [--until <pos>] [--key <pattern>] [--type <kind>] [--limit <n>] [--follow]
       pnpm replay -- [filters] --republish [--include-rpc [--allow-writes]] [--to-queue <q>] [--dry-run]

A request's story
  --request <id>          every entry of one request (its x-request-id), drawn as a tree: the HTTP request,
                          the calls it made with their replies, the events, each consumer's tries, what they caused
  --trace <id>            the same for a trace id (32 hex digits, the middle of a traceparent)
  --json                  the story as JSON lines, one per entry in tree order (depth, parent, position, payload)
  Our ids carry their time: the story is found in a second. A client's own request id does not: the whole
  journal is read, or --from/--until (which, for a timed id, each replace their side of its window).

Reading entries (one JSON line each: position "<offset>:<index>", at in ISO with ms, payload decoded)
  --from <pos>            where to start (default: first)
  --until <pos>           the last time or position to read (default: the journal's end as of the call)
  --key <pattern>         names, in topic syntax (* one word, # zero or more): users.#, projects.project.*;
                          http selects HTTP entries; a pattern must match a name of the protocol
  --any-key               accept a --key that matches no known name (tests, a newer protocol)
  --type <kind>           http | rpc-request | rpc-reply | event | delivery
  --limit <n>             stop after n matching entries
  --follow                go on with what is written after the call (Ctrl-C to stop)
  --print                 print matches (default unless --republish)
  --url <amqp url>        broker and vhost (default: $AMQP_URL or amqp://guest:guest@127.0.0.1:5672)

Positions (--from, --until)
  first | last            the journal's first entry, its last batch (last: --from only)
  next                    --from only, with --follow: what is written after the call
  offset:<n> | <n>        the batch at stream offset n (a bare number below 1000000000)
  <n>:<i> | offset:<n>:<i>  entry i of the batch at offset n (a record's position)
  2026-11-27T10:00:00.123Z, 2026-11-27T12:00:00+02:00   a time with its zone (ms optional)
  2026-11-27              midnight UTC of that day
  @1795765180000          epoch milliseconds
  -10m, -2h, -30s, -500ms, -1d   that long before now

Re-publishing (safe by default)
  --republish             send matches again: events to the events exchange with their name as routing key
  --include-rpc           RPC requests too (to the rpc exchange, executed, answered to nobody) ...
  --allow-writes          ... including writes; without it only RPCs whose descriptor says effect "read"
  --to-queue <queue>      to this queue instead (it must exist)
  --dry-run               print where each match would go, publish nothing
  --fresh-ids             new message ids, so idempotent consumers process them again
  --include-replayed      also send entries that are themselves replays (skipped by default: no loops)
  Never re-published: replies, http and delivery entries, entries whose personal data was replaced.
  Publishes are mandatory and confirmed; what no queue takes is counted as unroutable. The summary goes
  to stderr as one JSON line: read, matched, republished, skipped, refused, unroutable.

Examples
  pnpm replay -- --request 0193a0f2-8e5c-7cc1-9b1e-3d1c2b4a5f60          # the story of one request
  pnpm replay -- --trace 0193a0f28e5c7cc19b1e3d1c2b4a5f60 --json        # a trace, as JSON lines
  pnpm replay -- --from -10m --type event --key 'users.#'               # user events of the last 10 minutes
  pnpm replay -- --from 2026-11-27T10:00:00Z --until 2026-11-27T10:05:00.500Z --type rpc-reply
  pnpm replay -- --from 1200:3 --until 1250 --limit 20                  # from entry 3 of batch 1200
  pnpm replay -- --from 1200:3 --limit 1 --republish --dry-run          # where it would go
  pnpm replay -- --from -1h --key users.user.deleted --republish        # to every consumer again
  pnpm replay -- --from 1200:3 --limit 1 --republish --to-queue projects.users.user.deleted
  pnpm replay -- --from -5m --type rpc-request --republish --include-rpc --dry-run

Exit codes: 0 done; 1 broker, vhost or journal missing, or nothing found for a story; 2 a bad option value.
`;
