import { redactUrl } from "@fundraise/bus";
import type { ChannelModel } from "amqplib";
import amqp from "amqplib";
import { entriesOf, type JournalMessage } from "../format.ts";
import { type StreamBounds, streamBounds } from "../stream-end.ts";
import { JOURNAL_QUEUE } from "../topology.ts";
import { amqpCode, BadOptionError, ReplayError } from "./errors.ts";
import { describePosition, type Position } from "./positions.ts";

/** A connection for one read; an unreachable broker is one line, not a stack. */
export async function connectJournal(url: string): Promise<ChannelModel> {
  try {
    const connection = await amqp.connect(url, {
      clientProperties: { connection_name: "bus-replay" },
      timeout: 10_000,
    });
    // An error after this point fails the read in progress (its channel closes), not the process.
    connection.on("error", () => undefined);
    return connection;
  } catch (error) {
    throw new ReplayError(`cannot connect to ${redactUrl(url)}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** Whether `queue` exists, asked on a throwaway channel (a failed check closes the channel it ran on). */
export async function queueExists(connection: ChannelModel, queue: string): Promise<boolean> {
  const channel = await connection.createChannel();
  channel.on("error", () => undefined);
  try {
    await channel.checkQueue(queue);
    return true;
  } catch (error) {
    if (amqpCode(error) === 404) return false;
    throw error;
  } finally {
    await channel.close().catch(() => undefined);
  }
}

export async function requireJournal(connection: ChannelModel): Promise<void> {
  if (!(await queueExists(connection, JOURNAL_QUEUE))) {
    throw new ReplayError(
      `no journal (${JOURNAL_QUEUE}) in this vhost: no bus with journaling has connected to it`,
    );
  }
}

/** A queue's message count as the broker reports it, or undefined when the queue does not exist. */
async function messageCount(connection: ChannelModel, queue: string): Promise<number | undefined> {
  const channel = await connection.createChannel();
  channel.on("error", () => undefined);
  try {
    return (await channel.checkQueue(queue)).messageCount;
  } catch (error) {
    if (amqpCode(error) === 404) return undefined;
    throw error;
  } finally {
    await channel.close().catch(() => undefined);
  }
}

/** How long a stream the broker counts as empty gets to deliver its first message anyway. */
const EMPTY_CHECK_MS = 200;

/**
 * A small stream's bounds as of the call (the late stream); one that does not exist is empty. streamBounds
 * waits a second to call a stream empty, which would double a story's time when nothing came late: the
 * broker's message count says a stream is not empty at once; its zero may lag new messages (its metrics
 * are collected now and then), so a stream counted empty still gets a short chance to deliver.
 */
export async function boundsOf(connection: ChannelModel, queue: string): Promise<StreamBounds> {
  const count = await messageCount(connection, queue);
  if (count === undefined) return { first: undefined, last: undefined };
  if (count === 0 && (await messageAt(connection, queue, "first", EMPTY_CHECK_MS)) === undefined) {
    return { first: undefined, last: undefined };
  }
  return streamBounds(connection, queue);
}

/** The message at `offset` exactly (numeric offsets start at that message), or undefined after `waitMs`. */
export async function messageAt(
  connection: ChannelModel,
  queue: string,
  offset: number | "first",
  waitMs = 5000,
): Promise<JournalMessage | undefined> {
  const channel = await connection.createChannel();
  channel.on("error", () => undefined);
  try {
    await channel.prefetch(1);
    return await new Promise<JournalMessage | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), waitMs);
      channel
        .consume(
          queue,
          (message) => {
            clearTimeout(timer);
            resolve(message ?? undefined);
          },
          { noAck: false, arguments: { "x-stream-offset": offset } },
        )
        .catch(() => resolve(undefined));
    });
  } finally {
    await channel.close().catch(() => undefined);
  }
}

/** How many entries the batch at `offset` holds (0 when it cannot be read). */
export async function entryCountAt(connection: ChannelModel, queue: string, offset: number): Promise<number> {
  const message = await messageAt(connection, queue, offset);
  if (!message) return 0;
  try {
    return entriesOf(message).length;
  } catch {
    return 0;
  }
}

/** The stream's last position, `<offset>:<index>`, for messages about positions past it. */
export async function lastPosition(connection: ChannelModel, queue: string, last: number): Promise<string> {
  const count = await entryCountAt(connection, queue, last);
  return `${last}:${Math.max(0, count - 1)}`;
}

/**
 * Refuses offsets past the stream's end as of the call (naming its last position) and, once `first` and
 * `last` are offsets, an `--until` before `--from`. An index beyond its batch is caught when the batch is read.
 */
export async function checkPositions(
  connection: ChannelModel,
  bounds: StreamBounds,
  from: Position | undefined,
  until: Position | undefined,
): Promise<void> {
  for (const [option, position] of [
    ["--from", from],
    ["--until", until],
  ] as const) {
    if (position === undefined || typeof position !== "object" || !("offset" in position)) continue;
    if (bounds.last === undefined) {
      throw new BadOptionError(`${option} ${describePosition(position)}: the journal is empty`);
    }
    if (position.offset > bounds.last) {
      const last = await lastPosition(connection, JOURNAL_QUEUE, bounds.last);
      throw new BadOptionError(
        `${option} ${describePosition(position)} is past the journal's end (its last position is ${last})`,
      );
    }
  }
  const offsetOf = (p: Position | undefined) =>
    p === "first" ? bounds.first : p === "last" ? bounds.last : undefined;
  const start = offsetOf(from);
  if (start !== undefined && until !== undefined && typeof until === "object" && "offset" in until) {
    if (until.offset < start) {
      throw new BadOptionError(
        `--until ${describePosition(until)} is before --from ${String(from)} (offset ${start})`,
      );
    }
  }
}

/** A batch's index problem: a position names an entry its batch does not have. */
export function indexProblem(option: string, offset: number, index: number, count: number): BadOptionError {
  const range = count === 0 ? "no entries" : `${count} entries (${offset}:0 to ${offset}:${count - 1})`;
  return new BadOptionError(`${option} ${offset}:${index}: the batch at offset ${offset} has ${range}`);
}
