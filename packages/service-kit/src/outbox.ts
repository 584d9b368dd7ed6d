import { type Bus, outageReason } from "@fundraise/bus";
import { createOutboxRelay, type OutboxRelay, pruneProcessedMessages } from "@fundraise/outbox";
import pg from "pg";
import type { Logger } from "./logger.ts";
import { type OutboxBacklog, processMetrics } from "./metrics.ts";
import { guardPoolClients } from "./sql-pool.ts";

export interface ServiceOutbox {
  relay: OutboxRelay;
  /** Unpublished events and the age of the oldest (a scrape's `outbox_backlog_events`); absent: unknown. */
  backlog?: () => Promise<OutboxBacklog>;
  /** Stops the relay after the pass under way (it publishes what is committed) and the pruning; idempotent. */
  stop(): Promise<void>;
}

/** Handled-message claims outlive the bus's redelivery and the journal's replay window (7 days). */
export const PROCESSED_MESSAGE_RETENTION_MS = 14 * 86_400_000;
const PRUNE_INTERVAL_MS = 3_600_000;

/**
 * The outbox of a service's schema, wired the same way in every service: the relay on a small pool of
 * its own (it needs dedicated connections for a batch transaction and LISTEN, and reads only committed
 * rows; use cases write through MikroORM, see sql.ts), and hourly pruning of old idempotency claims.
 */
export function startOutbox(deps: {
  url: string;
  schema: string;
  bus: Pick<Bus, "publish">;
  log: Logger;
}): ServiceOutbox {
  const pool = new pg.Pool({ connectionString: deps.url, max: 2 });
  guardPoolClients(pool, (err) => {
    processMetrics().dbError("connection");
    // The database away: the relay's next pass fails and says so, once per burst (relay.ts).
    if (outageReason(err) === undefined) deps.log.warn({ err }, "outbox relay connection failed");
    else deps.log.debug({ err }, "outbox relay connection failed");
  });
  const relay = createOutboxRelay({ pool, bus: deps.bus, schema: deps.schema, logger: deps.log });
  const pruning = setInterval(() => {
    pruneProcessedMessages(pool, PROCESSED_MESSAGE_RETENTION_MS, deps.schema).then(
      (n) => n > 0 && deps.log.info({ pruned: n }, "old handled-message claims pruned"),
      (err: unknown) => deps.log.warn({ err }, "pruning handled-message claims failed"),
    );
  }, PRUNE_INTERVAL_MS);
  pruning.unref();
  let stopped: Promise<void> | undefined;
  return {
    relay,
    stop() {
      stopped ??= (async () => {
        clearInterval(pruning);
        await relay.stop();
        await pool.end();
      })();
      return stopped;
    },
  };
}
