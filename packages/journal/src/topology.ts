import { Exchanges } from "@fundraise/bus";
import type { Channel, ChannelModel } from "amqplib";
import type { Logger } from "pino";

/** Fanout into the journal stream: every process sends its batches of entries here. */
export const JOURNAL_EXCHANGE = "journal";
export const JOURNAL_QUEUE = "bus.journal";
/** Fanout into the late stream: entries written long after their request started, again (journal.ts). */
export const LATE_EXCHANGE = "journal.late";
export const LATE_QUEUE = "bus.journal.late";

/** `x-max-age` syntax: a number and a unit (Y, M, D, h, m, s). */
export const MAX_AGE = /^[1-9]\d*(Y|M|D|h|m|s)$/;

/**
 * The streams' arguments. The broker refuses a re-declaration with other arguments, so only the retention
 * comes from the settings, and a stream that exists keeps its own (declareStream says how to change it).
 */
export function journalArguments(maxAge: string) {
  return {
    "x-queue-type": "stream",
    "x-max-age": maxAge,
    "x-max-length-bytes": 2 * 1024 ** 3,
    // Retention drops whole segments; smaller segments make it follow the limits more closely.
    "x-stream-max-segment-size-bytes": 100 * 1024 ** 2,
  } as const;
}

/**
 * The journal's exchanges and streams; idempotent, run on every (re)connect. Format-1 processes bound the
 * `events` exchange into the journal; entries are recorded by the bus now (events once confirmed, with
 * their personal values replaced), so that binding is removed.
 */
export async function declareJournal(
  connection: ChannelModel,
  options: { maxAge: string; log: Logger },
): Promise<void> {
  await declareStream(connection, JOURNAL_EXCHANGE, JOURNAL_QUEUE, options);
  await declareStream(connection, LATE_EXCHANGE, LATE_QUEUE, options);
  const channel = await connection.createChannel();
  try {
    await channel.unbindExchange(JOURNAL_EXCHANGE, Exchanges.EVENTS, "#");
  } finally {
    await channel.close().catch(() => undefined);
  }
}

async function declareStream(
  connection: ChannelModel,
  exchange: string,
  queue: string,
  options: { maxAge: string; log: Logger },
): Promise<void> {
  let channel: Channel = await connection.createChannel();
  channel.on("error", () => undefined);
  try {
    await channel.assertExchange(exchange, "fanout", { durable: true });
    try {
      await channel.assertQueue(queue, { durable: true, arguments: journalArguments(options.maxAge) });
    } catch (error) {
      if ((error as { code?: unknown }).code !== 406) throw error;
      // The stream exists with another retention: it keeps it. A policy changes it in place.
      options.log.warn(
        { queue, maxAge: options.maxAge },
        `the journal stream keeps the retention it was made with; to change it: rabbitmqctl set_policy ${queue}-retention '^${queue.replaceAll(".", "\\.")}$' '{"max-age":"${options.maxAge}"}' --apply-to queues`,
      );
      channel = await connection.createChannel();
      channel.on("error", () => undefined);
      await channel.checkQueue(queue);
    }
    await channel.bindQueue(queue, exchange, "");
  } finally {
    await channel.close().catch(() => undefined);
  }
}
