import { type Bus, createWaitingLog, decodeBody, outageReason } from "@fundraise/bus";
import type { EventDescriptor } from "@fundraise/protocol";
import pino, { type Logger } from "pino";
import Type from "typebox";
import { outboxChannelOf, type RowHeaders } from "./outbox.ts";
import { checkSchema, type SqlClient, type SqlPool } from "./sql.ts";

export interface OutboxRelayOptions {
  pool: SqlPool;
  bus: Pick<Bus, "publish">;
  schema?: string;
  logger?: Logger;
  /** Poll interval; with LISTEN/NOTIFY a commit wakes the relay at once (default 1000). */
  intervalMs?: number;
  /** Rows per transaction (default 100). */
  batchSize?: number;
  /** Keep published rows this long, for inspection; 0 deletes them when published (default 1 h). */
  retainPublishedMs?: number;
  /** Use LISTEN/NOTIFY when the pool's clients support it (default true). */
  listen?: boolean;
  /** Start polling at once (default true); tests drive `runOnce` instead. */
  autoStart?: boolean;
}

export interface OutboxRelay {
  /** One pass: publishes pending rows (in batches) until none is left; returns how many were published. */
  runOnce(): Promise<number>;
  start(): void;
  /** Stops polling and waits for the pass under way. Idempotent. */
  stop(): Promise<void>;
}

interface OutboxRow {
  id: string;
  event_name: string;
  payload: Buffer;
  content_type: string;
  headers: RowHeaders | null;
}

/** Accepts any payload: it was validated by enqueue, before it was committed. */
const anyPayload = (name: string): EventDescriptor => ({ type: "event", name, payload: Type.Unknown() });

/**
 * Publishes committed outbox rows in `seq` order and marks them published after the broker confirmed them.
 * Rows are claimed with FOR UPDATE SKIP LOCKED, so several instances share the work without publishing a
 * row twice while it is locked. A crash between confirm and commit republishes that row: the messageId is
 * the row id, so idempotent consumers skip it.
 */
export function createOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  const schema = checkSchema(options.schema ?? "public");
  const log = (options.logger ?? pino({ level: "silent" })).child({ component: "outbox-relay", schema });
  const intervalMs = options.intervalMs ?? 1000;
  const batchSize = options.batchSize ?? 100;
  const retainMs = options.retainPublishedMs ?? 3_600_000;
  let running = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let pass: Promise<number> | undefined;
  let again = false;
  let releaseListener: ((error?: Error | boolean) => void) | undefined;
  let listener: SqlClient | undefined;
  let lastCleanup = 0;
  let listenEnabled = options.listen ?? true;
  // While the database or the broker is away, a pass fails every interval: one line per burst of failures
  // (with the stack only when the failure is not an outage), one when the relay gets through again.
  const waitingForDatabase = createWaitingLog({ log, what: "the database" });
  const waitingForBroker = createWaitingLog({ log, what: "the message broker" });

  /** One transaction: claims up to batchSize rows, publishes them, marks them. */
  async function publishBatch(): Promise<{ published: number; more: boolean }> {
    const client = await options.pool.connect();
    let failed: unknown;
    try {
      await client.query("BEGIN");
      const { rows } = await client.query(
        `SELECT id, event_name, payload, content_type, headers FROM ${schema}.outbox
         WHERE published_at IS NULL ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [batchSize],
      );
      const done: string[] = [];
      for (const raw of rows) {
        const row = raw as unknown as OutboxRow;
        try {
          const payload = decodeBody(row.payload, row.content_type);
          await options.bus.publish(anyPayload(row.event_name), payload as never, {
            messageId: row.id,
            ...(row.headers?.requestId !== undefined ? { requestId: row.headers.requestId } : {}),
            ...(row.headers?.causedBy !== undefined ? { causedBy: row.headers.causedBy } : {}),
            ...(row.headers?.traceparent !== undefined ? { traceparent: row.headers.traceparent } : {}),
          });
          done.push(row.id);
        } catch (error) {
          // Stop at the first failure: what follows stays pending, so the order is kept.
          failed = error;
          if (outageReason(error) !== undefined)
            waitingForBroker.failed(error, { event: row.event_name, messageId: row.id });
          else
            log.warn(
              { err: error, event: row.event_name, messageId: row.id },
              "outbox row not published; will retry",
            );
          break;
        }
      }
      if (done.length > 0) {
        const sql =
          retainMs === 0
            ? `DELETE FROM ${schema}.outbox WHERE id = ANY($1::uuid[])`
            : `UPDATE ${schema}.outbox SET published_at = now() WHERE id = ANY($1::uuid[])`;
        await client.query(sql, [done]);
      }
      await client.query("COMMIT");
      if (failed === undefined && rows.length > 0) waitingForBroker.connected();
      const published = done.length;
      if (published > 0) log.debug({ published }, "outbox rows published");
      return { published, more: failed === undefined && rows.length === batchSize };
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  async function cleanup(): Promise<void> {
    if (retainMs === 0 || Date.now() - lastCleanup < Math.min(retainMs, 60_000)) return;
    lastCleanup = Date.now();
    const client = await options.pool.connect();
    try {
      await client.query(
        `DELETE FROM ${schema}.outbox WHERE published_at < now() - make_interval(secs => $1::double precision / 1000)`,
        [retainMs],
      );
    } finally {
      client.release();
    }
  }

  function runOnce(): Promise<number> {
    if (pass) {
      // A notification during a pass may concern rows that pass did not see: run once more after it.
      again = true;
      return pass;
    }
    pass = (async () => {
      let total = 0;
      do {
        do {
          again = false;
          let more = true;
          // Batch after batch, each on a connection released before the next: never more than one held.
          while (more && !stopped) {
            const batch = await publishBatch();
            total += batch.published;
            more = batch.more;
          }
        } while (again && !stopped);
        await cleanup();
        // A notification that arrived while pruning joined this pass: its rows are not published yet.
      } while (again && !stopped);
      return total;
    })().finally(() => {
      pass = undefined;
    });
    return pass;
  }

  /** Releases a LISTEN client once: its error event may come after stop() or a failed LISTEN released it. */
  function releaser(client: SqlClient): (error?: Error | boolean) => void {
    let released = false;
    return (error) => {
      if (released) return;
      released = true;
      client.release(error);
    };
  }

  async function ensureListener(): Promise<void> {
    if (listener || stopped || !listenEnabled) return;
    let release: ((error?: Error | boolean) => void) | undefined;
    try {
      const own = await options.pool.connect();
      const releaseOwn = releaser(own);
      release = releaseOwn;
      if (!own.on) {
        releaseOwn();
        listenEnabled = false;
        return;
      }
      own.on("notification", () => wake());
      own.on("error", (error: Error) => {
        if (listener === own) {
          listener = undefined;
          const reason = outageReason(error);
          log.warn(
            reason === undefined ? { err: error } : { reason },
            "outbox LISTEN connection failed; polling until it is back",
          );
        }
        releaseOwn(error);
      });
      await own.query(`LISTEN ${outboxChannelOf(schema)}`);
      listener = own;
      releaseListener = releaseOwn;
    } catch (error) {
      // The database away: the pass that follows fails too, and says so (one line per burst).
      if (outageReason(error) === undefined) log.warn({ err: error }, "outbox LISTEN unavailable; polling");
      release?.(error instanceof Error ? error : true);
    }
  }

  function wake(): void {
    if (!running || stopped) return;
    void tick();
  }

  async function tick(): Promise<void> {
    clearTimeout(timer);
    try {
      await ensureListener();
      await runOnce();
      waitingForDatabase.connected();
    } catch (error) {
      if (outageReason(error) !== undefined) waitingForDatabase.failed(error);
      else log.warn({ err: error }, "outbox pass failed; will retry");
    }
    // Ticks overlap (a notification wakes one while another waits on the same pass): the last to end
    // keeps the one timer, else every notification would leave a polling loop of its own behind.
    clearTimeout(timer);
    if (running && !stopped) timer = setTimeout(() => void tick(), intervalMs);
  }

  const relay: OutboxRelay = {
    runOnce,
    start() {
      if (running || stopped) return;
      running = true;
      void tick();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      running = false;
      clearTimeout(timer);
      await pass?.catch(() => undefined);
      if (listener) {
        const own = listener;
        listener = undefined;
        try {
          await own.query(`UNLISTEN ${outboxChannelOf(schema)}`);
        } catch {
          // The connection is being dropped anyway.
        }
        releaseListener?.();
      }
    },
  };
  if (options.autoStart ?? true) relay.start();
  return relay;
}
