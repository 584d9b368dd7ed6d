import { randomUUID } from "node:crypto";
import { activeTraceparent, encodeBody, type TraceContext } from "@fundraise/bus";
import { type EventDescriptor, type PayloadOf, validatorOf } from "@fundraise/protocol";
import { checkSchema, type SqlExecutor } from "./sql.ts";

/**
 * DDL of the outbox; include it in the service's migrations. `seq` gives the publishing order (uuids do
 * not sort by time); the payload is stored encoded, exactly as it will travel (JSON).
 */
export function outboxDdl(schema = "public"): string {
  const s = checkSchema(schema);
  return `CREATE TABLE IF NOT EXISTS ${s}.outbox (
  id uuid PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  event_name text NOT NULL,
  payload bytea NOT NULL,
  content_type text NOT NULL,
  headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz NULL
);
CREATE INDEX IF NOT EXISTS outbox_unpublished_idx ON ${s}.outbox (seq) WHERE published_at IS NULL;
CREATE INDEX IF NOT EXISTS outbox_published_at_idx ON ${s}.outbox (published_at) WHERE published_at IS NOT NULL;
`;
}

export const OUTBOX_DDL = outboxDdl();

/**
 * The transaction-local setting that holds the writing transaction's traceparent (set by the service's
 * transaction helper while tracing is on; see `withTraceparent`).
 */
export const TRACEPARENT_SETTING = "fundraise.traceparent";

/**
 * A migration's DDL: outbox rows written without headers (by a trigger, by SQL by hand) take the
 * writing transaction's traceparent, so their consumers continue the write's trace as `enqueue`'s do.
 */
export function outboxTraceDefaultDdl(schema = "public"): string {
  const s = checkSchema(schema);
  return `ALTER TABLE ${s}.outbox ALTER COLUMN headers SET DEFAULT
  jsonb_strip_nulls(jsonb_build_object('traceparent', nullif(current_setting('${TRACEPARENT_SETTING}', true), '')))`;
}

/** Records the active span's traceparent in the transaction `executor` runs (nothing outside a span). */
export async function withTraceparent(executor: SqlExecutor): Promise<void> {
  await withWriteContext(executor, undefined);
}

/** The transaction-local settings of the write's request id and journal cause (see `withWriteContext`). */
export const REQUEST_ID_SETTING = "fundraise.request_id";
export const CAUSED_BY_SETTING = "fundraise.caused_by";

/**
 * Records the write's context in the transaction `executor` runs, in one statement: its traceparent (the
 * active span's, else the context's), request id and journal cause. Outbox rows a trigger writes take them
 * (the users schema's `headers` default), so their events belong to the request's story as `enqueue`'s do.
 * Nothing to record: no statement.
 */
export async function withWriteContext(
  executor: SqlExecutor,
  context: TraceContext | undefined,
): Promise<void> {
  const traceparent = activeTraceparent() ?? context?.traceparent;
  const { requestId, causedBy } = context ?? {};
  if (traceparent === undefined && requestId === undefined && causedBy === undefined) return;
  await executor.query(
    "SELECT set_config($1, $2, true), set_config($3, $4, true), set_config($5, $6, true)",
    [
      TRACEPARENT_SETTING,
      traceparent ?? "",
      REQUEST_ID_SETTING,
      requestId ?? "",
      CAUSED_BY_SETTING,
      causedBy ?? "",
    ],
  );
}

/** The LISTEN/NOTIFY channel the relay wakes up on; enqueue notifies it (delivered at commit). */
export const outboxChannelOf = (schema: string): string => `bus_outbox_${checkSchema(schema)}`;

export interface EnqueueOptions {
  schema?: string;
  /** Defaults to a fresh UUID; it becomes the event's messageId, stable across relay retries. */
  messageId?: string;
  /** The message being handled: its request id and trace travel with the event. */
  context?: TraceContext;
}

/**
 * Writes an event into the outbox within the caller's transaction (`executor` must be the transaction's
 * connection): it is published after commit, and never if the transaction rolls back. Returns its messageId.
 */
export async function enqueue<D extends EventDescriptor>(
  executor: SqlExecutor,
  descriptor: D,
  payload: PayloadOf<D>,
  options: EnqueueOptions = {},
): Promise<string> {
  const [id] = await writeEvents(executor, [{ descriptor, payload, messageId: options.messageId }], options);
  return id as string;
}

/**
 * What a row keeps of the write that made it: the request id and the journal id of the handling that wrote
 * it (the event's place in the request's story), and the write's trace, which the event's consumers continue.
 */
function rowHeaders(context: TraceContext | undefined): RowHeaders {
  const headers: RowHeaders = {};
  const { requestId, causedBy, traceparent = activeTraceparent() } = context ?? {};
  if (requestId !== undefined) headers.requestId = requestId;
  if (causedBy !== undefined) headers.causedBy = causedBy;
  if (traceparent !== undefined) headers.traceparent = traceparent;
  return headers;
}

/** The `headers` column of an outbox row. */
export interface RowHeaders {
  requestId?: string;
  causedBy?: string;
  traceparent?: string;
}

/** One event of `enqueueMany`. */
export interface OutboxItem<D extends EventDescriptor = EventDescriptor> {
  descriptor: D;
  payload: PayloadOf<D>;
}

/** Rows per INSERT of `enqueueMany`: bounds the size of one statement's parameter. */
const ENQUEUE_CHUNK = 2_000;

/**
 * `enqueue` for many events at once (an indexer's block range): the same rows, published in the order
 * given, in one statement per 2,000 events. Every payload is validated first; returns the
 * messageIds in order.
 */
export function enqueueMany(
  executor: SqlExecutor,
  items: readonly OutboxItem[],
  options: Omit<EnqueueOptions, "messageId"> = {},
): Promise<string[]> {
  return writeEvents(executor, items, options);
}

/** The rows of `enqueue` and `enqueueMany`, and the relay's wake-up, in as few statements as the chunks. */
async function writeEvents(
  executor: SqlExecutor,
  items: readonly (OutboxItem & { messageId?: string | undefined })[],
  options: Omit<EnqueueOptions, "messageId">,
): Promise<string[]> {
  if (items.length === 0) return [];
  const schema = checkSchema(options.schema ?? "public");
  const headers = rowHeaders(options.context);
  const rows = items.map(({ descriptor, payload, messageId }) => {
    validatorOf(descriptor.payload).assert(payload, `${descriptor.name} event`);
    const { body, contentType } = encodeBody(payload);
    const id = messageId ?? randomUUID();
    return { id, name: descriptor.name, body: body.toString("base64"), contentType, headers };
  });
  for (let start = 0; start < rows.length; start += ENQUEUE_CHUNK) {
    // One JSON parameter (not arrays): it binds the same through pg and through an ORM's executor. The
    // last chunk wakes the relay in its own statement (a data-modifying WITH runs whatever the query reads):
    // a transaction's events cost one round trip.
    await executor.query(
      `WITH queued AS (INSERT INTO ${schema}.outbox (id, event_name, payload, content_type, headers)
         SELECT (r->>'id')::uuid, r->>'name', decode(r->>'body', 'base64'), r->>'contentType', r->'headers'
         FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS t(r, n) ORDER BY n)
       SELECT pg_notify($2, '') WHERE $3::boolean`,
      [
        JSON.stringify(rows.slice(start, start + ENQUEUE_CHUNK)),
        outboxChannelOf(schema),
        start + ENQUEUE_CHUNK >= rows.length,
      ],
    );
  }
  return rows.map((r) => r.id);
}
