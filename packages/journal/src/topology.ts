import { Exchanges } from "@fundraise/bus";
import type { Channel } from "amqplib";

/** fanout into the journal stream; the bus's `events` exchange is bound to it with `#`. */
export const JOURNAL_EXCHANGE = "journal";
export const JOURNAL_QUEUE = "bus.journal";

/**
 * Fixed for every process: queue arguments cannot change after declaration (the broker refuses a
 * redeclaration that differs), so nothing here may depend on per-process options.
 */
export const JOURNAL_ARGUMENTS = {
  "x-queue-type": "stream",
  "x-max-age": "7D",
  "x-max-length-bytes": 2 * 1024 ** 3,
  // Retention drops whole segments; smaller segments make it follow the limits more closely.
  "x-stream-max-segment-size-bytes": 100 * 1024 ** 2,
} as const;

/** The journal exchange and stream, and every event into it; idempotent, run on every (re)connect. */
export async function declareJournal(channel: Channel): Promise<void> {
  await channel.assertExchange(JOURNAL_EXCHANGE, "fanout", { durable: true });
  await channel.assertQueue(JOURNAL_QUEUE, { durable: true, arguments: { ...JOURNAL_ARGUMENTS } });
  await channel.bindQueue(JOURNAL_QUEUE, JOURNAL_EXCHANGE, "");
  await channel.bindExchange(JOURNAL_EXCHANGE, Exchanges.EVENTS, "#");
}
