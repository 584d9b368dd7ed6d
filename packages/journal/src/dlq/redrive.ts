import { createRequire } from "node:module";
import { carriedHeaders, compactHeaders, Header, type Headers, persistentCopyOf } from "@fundraise/bus";
import type { Channel, ChannelModel, Message, Options } from "amqplib";
import { queueState, quietChannel } from "./broker.ts";
import { Deliveries } from "./deliveries.ts";
import { InputError } from "./errors.ts";
import { eventOf, matchesFilter, type RedriveFilter, readDeadLetter } from "./message.ts";
import { giveBack, MAX_WINDOW, QUIET_MS } from "./peek.ts";

/** On a re-driven message: the DLQ it came from, and when (ms); the subscriber's journal names the round by it. */
export const REDRIVEN_FROM = Header.REDRIVEN_FROM;
export const REDRIVEN_AT = Header.REDRIVEN_AT;

export interface RedriveOptions {
  /** The dead-letter queue. */
  queue: string;
  filter: RedriveFilter;
  /** Move at most this many matching messages. */
  limit?: number;
  /** Report what would move, move nothing. */
  dryRun?: boolean;
  onMessage?: (line: RedriveLine) => void;
  /**
   * Test hook, called with the commits so far once a message's publish and ack have reached the broker
   * and before their commit: the moment a crash must lose nothing and deliver nothing twice.
   */
  beforeCommit?: (committed: number) => void;
}

export interface RedriveLine {
  messageId: string | undefined;
  target: string;
  action: "moved" | "would-move";
}

export interface RedriveSummary {
  matched: number;
  moved: number;
  /** Looked at and left in the DLQ, in their order: not matching, or a dry run. */
  returned: number;
  /** The run stopped with its window full of messages that stay (more than 65,535 not matching). */
  stalled: boolean;
}

/**
 * Moves the matching dead letters back to their original queues, each in an AMQP transaction of its own:
 * the copy's publish and the dead letter's ack commit together or not at all, so a crash at any point
 * loses none and delivers none twice. The messages there at the start are all consumed at once (up to
 * 65,535) and looked at in order; the others are held unacknowledged and go back to the head of the DLQ
 * in their order when the channel closes, or the connection dies (peek.ts `readAll` says why so).
 */
export async function redrive(connection: ChannelModel, options: RedriveOptions): Promise<RedriveSummary> {
  const state = await queueState(connection, options.queue);
  if (!state.exists) throw new InputError(`no queue ${options.queue}`);
  const summary: RedriveSummary = { matched: 0, moved: 0, returned: 0, stalled: false };
  if (state.depth === 0) return summary;
  const window = Math.min(state.depth, MAX_WINDOW);
  const channel = await quietChannel(connection);
  const deliveries = new Deliveries();
  try {
    await channel.prefetch(window);
    await transaction(channel, "select");
    await channel.consume(options.queue, (m) => (m ? deliveries.push(m) : deliveries.end()), {
      noAck: false,
    });
    const mover = new Mover(connection, channel, options);
    // Only the messages there now: what is dead-lettered meanwhile (a re-driven one failing again) is behind.
    for (let scanned = 0; scanned < state.depth; scanned++) {
      if (options.limit !== undefined && summary.matched >= options.limit) break;
      // Every slot of the window holds a message that stays: the broker sends no more.
      if (summary.returned >= window) {
        summary.stalled = true;
        break;
      }
      const message = await deliveries.next(QUIET_MS);
      if (!message) break;
      const letter = readDeadLetter(message, options.queue);
      if (!matchesFilter(letter, options.filter)) {
        summary.returned++;
        continue;
      }
      summary.matched++;
      const line = { messageId: letter.messageId, target: letter.originalQueue };
      if (options.dryRun) {
        summary.returned++;
        options.onMessage?.({ ...line, action: "would-move" });
        continue;
      }
      await mover.move(message, line.messageId, line.target, summary.moved);
      summary.moved++;
      options.onMessage?.({ ...line, action: "moved" });
    }
  } finally {
    // Messages on their way are checked out too: closing before they are in would return only a part.
    await deliveries.received(window, QUIET_MS);
    await giveBack(connection, channel, options.queue, state.depth - summary.moved);
  }
  return summary;
}

/** Moves one message per transaction on the re-drive's channel. */
class Mover {
  private readonly targets = new Map<string, boolean>();
  private unroutable = false;

  constructor(
    private readonly connection: ChannelModel,
    private readonly channel: Channel,
    private readonly options: RedriveOptions,
  ) {
    channel.on("return", () => {
      this.unroutable = true;
    });
  }

  async move(message: Message, messageId: string | undefined, target: string, moved: number): Promise<void> {
    if (!(await this.exists(target))) {
      throw new InputError(
        `target queue ${target} of message ${messageId ?? "(no id)"} does not exist; ` +
          (moved === 0 ? "nothing moved" : `${moved} moved before it`),
      );
    }
    const { channel, options } = this;
    channel.publish("", target, message.content, redrivenProperties(message, options.queue));
    channel.ack(message);
    if (options.beforeCommit) {
      // A round trip on the same channel: the broker has the publish and the ack when it answers.
      await channel.checkQueue(options.queue);
      options.beforeCommit(moved);
    }
    await transaction(channel, "commit");
    // A basic.return comes before the commit's answer: the target vanished since it was checked.
    if (this.unroutable) {
      await putBack(channel, options.queue, message);
      throw new Error(
        `${target} disappeared during the re-drive; message ${messageId} was put back at the end of ${options.queue}`,
      );
    }
  }

  /** Whether a target queue exists, asked once per queue, before the first message goes there. */
  private async exists(queue: string): Promise<boolean> {
    let exists = this.targets.get(queue);
    if (exists === undefined) {
      exists = (await queueState(this.connection, queue)).exists;
      this.targets.set(queue, exists);
    }
    return exists;
  }
}

/** The copy for the original queue: a first attempt again, its dead-letter history dropped. */
export function redrivenProperties(
  message: Message,
  deadLetterQueue: string,
  now = Date.now(),
): Options.Publish {
  // carriedHeaders drops the broker's (x-death, x-delivery-count, ...); the bus's own are dropped here.
  const headers: Headers = carriedHeaders(message.properties.headers);
  for (const name of [
    Header.LAST_ERROR,
    Header.LAST_ERROR_KIND,
    Header.LAST_ERROR_CODE,
    Header.DEAD_LETTERED_AT,
    Header.ORIGINAL_QUEUE,
  ]) {
    delete headers[name];
  }
  // Through the default exchange its routing key is the queue: the event's name must travel in a header.
  const event = eventOf(message);
  if (event !== undefined) headers[Header.ORIGINAL_ROUTING_KEY] = event;
  headers[Header.ATTEMPT] = 1;
  headers[REDRIVEN_FROM] = deadLetterQueue;
  headers[REDRIVEN_AT] = now;
  return { ...persistentCopyOf(message), headers: compactHeaders(headers), mandatory: true };
}

/** A moved message the target refused goes back to the DLQ as it was (at its end: AMQP has no other way). */
async function putBack(channel: Channel, deadLetterQueue: string, message: Message): Promise<void> {
  const headers = carriedHeaders(message.properties.headers);
  channel.sendToQueue(deadLetterQueue, message.content, { ...persistentCopyOf(message), headers });
  await transaction(channel, "commit");
}

// amqplib has no transaction methods, but its promise channel's rpc sends any method and awaits the answer.
const methods = createRequire(import.meta.url)("amqplib/lib/defs") as Record<
  "TxSelect" | "TxSelectOk" | "TxCommit" | "TxCommitOk",
  number
>;
type RpcChannel = { rpc(method: number, fields: object, expect: number): Promise<unknown> };

async function transaction(channel: Channel, step: "select" | "commit"): Promise<void> {
  const rpc = channel as unknown as RpcChannel;
  if (step === "select") await rpc.rpc(methods.TxSelect, {}, methods.TxSelectOk);
  else await rpc.rpc(methods.TxCommit, {}, methods.TxCommitOk);
}
