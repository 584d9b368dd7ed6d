import type { Channel, ChannelModel, ConsumeMessage } from "amqplib";
import { messageOf, queueState, quietChannel } from "./broker.ts";
import { deadLetteredAtOf } from "./message.ts";

/**
 * Gives up waiting for the messages a queue's depth promised after this long without one: another
 * consumer took them. Only a concurrent reader makes a read wait that long.
 */
export const QUIET_MS = 3000;
/** How long a queue may take to count the messages a closed channel gave back. */
const SETTLE_MS = 3000;
/** AMQP's prefetch count is 16 bits: the most messages one consumer can hold. */
export const MAX_WINDOW = 65_535;

/**
 * Reads a queue without taking anything from it: all its messages (up to 65,535), in order, then gives
 * them back by closing the channel. Why all and why a close, measured on RabbitMQ 3.10:
 * - a quorum queue serves the messages it got back before the others, and puts each message it gets back
 *   at the end of those: reading only the first few of messages that were read before moves them behind
 *   the rest. Messages held all at once go back together, in their order.
 * - a `basic.nack` with requeue puts them at the back of a quorum queue without a delivery limit (a DLQ),
 *   and a consumer cancelled before the close may have its last deliveries reordered.
 * Classic queues keep the order either way. Each read adds 1 to a quorum queue's `x-delivery-count`
 * (harmless for a DLQ: no delivery limit). `depth` is the queue's depth as the caller saw it.
 */
export async function readAll(
  connection: ChannelModel,
  queue: string,
  depth: number,
  onMessage: (message: ConsumeMessage, index: number) => void,
): Promise<void> {
  if (depth <= 0) return;
  const wanted = Math.min(depth, MAX_WINDOW);
  const channel = await quietChannel(connection);
  let quiet: NodeJS.Timeout | undefined;
  try {
    await channel.prefetch(wanted);
    let received = 0;
    let finish: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const rearm = () => {
      clearTimeout(quiet);
      quiet = setTimeout(finish, QUIET_MS);
    };
    rearm();
    const consuming = channel.consume(
      queue,
      (message) => {
        // null: the broker cancelled the consumer (the queue was deleted meanwhile).
        if (!message) return finish();
        if (received < wanted) onMessage(message, received);
        received++;
        if (received >= wanted) finish();
        else rearm();
      },
      { noAck: false },
    );
    await consuming.catch((error: unknown) => {
      throw new Error(`cannot read ${queue}: ${messageOf(error)}`, { cause: error });
    });
    await done;
  } finally {
    clearTimeout(quiet);
    await giveBack(connection, channel, queue, depth);
  }
}

/** The first `limit` messages of a queue, head first, left in place and in order (readAll). */
export async function peek(
  connection: ChannelModel,
  queue: string,
  limit: number,
  depth: number,
): Promise<ConsumeMessage[]> {
  const messages: ConsumeMessage[] = [];
  await readAll(connection, queue, depth, (message, index) => {
    if (index < limit) messages.push(message);
  });
  return messages;
}

/** When its oldest message was dead-lettered (ms; normally the head's); undefined for an empty queue. */
export async function oldestDeadLetter(
  connection: ChannelModel,
  queue: string,
  depth: number,
): Promise<number | undefined> {
  let oldest: number | undefined;
  await readAll(connection, queue, depth, (message) => {
    const at = deadLetteredAtOf(message);
    if (at !== undefined && (oldest === undefined || at < oldest)) oldest = at;
  });
  return oldest;
}

/**
 * Closes a reading channel, which returns its unacknowledged messages, and waits until the queue counts
 * `depth` again: a quorum queue applies the return after the close is answered, and a read right after
 * (the next command) would otherwise miss them.
 */
export async function giveBack(
  connection: ChannelModel,
  channel: Channel,
  queue: string,
  depth: number,
): Promise<void> {
  await channel.close().catch(() => undefined);
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const state = await queueState(connection, queue).catch(() => undefined);
    // Gone, or back to its depth; past the deadline another consumer has taken some.
    if (!state?.exists || state.depth >= depth || Date.now() > deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
