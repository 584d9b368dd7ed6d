import {
  deadLetterQueueOf,
  Header,
  numberHeader,
  SUBSCRIPTIONS_STREAM,
  type SubscriptionRecord,
} from "@fundraise/bus";
import type { ChannelModel, ConsumeMessage } from "amqplib";
import { streamBounds } from "../stream-end.ts";
import { messageOf, queueState, quietChannel } from "./broker.ts";
import { InputError } from "./errors.ts";

/** A stream that hands out nothing for this long while records up to its last offset are due has stalled. */
const STALL_MS = 10_000;
/** Past the last offset, records that follow this closely are read too: later ones are harmless. */
const TAIL_MS = 250;
/** A stream `streamBounds` found empty gets this long to deliver a first record after all. */
const EMPTY_MS = 1500;

/**
 * Every dead-letter queue any subscription ever announced (AMQP cannot list queues), the latest record of
 * each: a consumer that moved to another service is shown under the new one. Sorted by queue name.
 */
export async function discoverDeadLetterQueues(connection: ChannelModel): Promise<SubscriptionRecord[]> {
  // A vhost no bus ever connected to has no stream: nothing was announced.
  if (!(await queueState(connection, SUBSCRIPTIONS_STREAM)).exists) return [];
  // streamBounds times the stream's bursts: on a slow broker it can see too little; it is a floor here.
  const { last } = await streamBounds(connection, SUBSCRIPTIONS_STREAM);
  const latest = new Map<string, SubscriptionRecord>();
  await readStream(connection, last, (message) => {
    const record = parseRecord(message.content);
    if (record) latest.set(record.deadLetterQueue, record);
  });
  return [...latest.values()].sort((a, b) => a.deadLetterQueue.localeCompare(b.deadLetterQueue));
}

/**
 * Reads the stream from its first message up to offset `last` at least, and on while more follows
 * within TAIL_MS (records written since are newer announcements: welcome). Without `last`, the stream
 * looked empty: it gets EMPTY_MS to show otherwise.
 */
async function readStream(
  connection: ChannelModel,
  last: number | undefined,
  onMessage: (message: ConsumeMessage) => void,
): Promise<void> {
  const channel = await quietChannel(connection);
  // A stream consumer needs a prefetch and acks: the acks only give credit for more.
  await channel.prefetch(1000);
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      let highest = -1;
      const stalled = () => reject(new Error(`${SUBSCRIPTIONS_STREAM} stopped before its offset ${last}`));
      const arm = (ms: number, then: () => void) => {
        clearTimeout(timer);
        timer = setTimeout(then, ms);
      };
      const rearm = () => {
        if (last === undefined || highest >= last) arm(TAIL_MS, resolve);
        else arm(STALL_MS, stalled);
      };
      if (last === undefined) arm(EMPTY_MS, resolve);
      else rearm();
      channel
        .consume(
          SUBSCRIPTIONS_STREAM,
          (message) => {
            if (!message)
              return reject(new Error(`the broker cancelled the read of ${SUBSCRIPTIONS_STREAM}`));
            channel.ack(message);
            const offset = numberHeader(message.properties.headers, Header.STREAM_OFFSET) ?? highest;
            highest = Math.max(highest, offset);
            onMessage(message);
            rearm();
          },
          { noAck: false, arguments: { "x-stream-offset": "first" } },
        )
        .catch((error: unknown) =>
          reject(new Error(`cannot read ${SUBSCRIPTIONS_STREAM}: ${messageOf(error)}`)),
        );
    });
  } finally {
    clearTimeout(timer);
    // Closing the channel ends its consumer.
    await channel.close().catch(() => undefined);
  }
}

/** A record as `announceSubscription` writes it; anything else on the stream is skipped. */
function parseRecord(content: Buffer): SubscriptionRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(content.toString("utf8"));
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const r = value as Record<string, unknown>;
  const strings = ["consumer", "event", "queue", "deadLetterQueue", "service"] as const;
  if (!strings.every((key) => typeof r[key] === "string" && r[key] !== "")) return undefined;
  return {
    consumer: r.consumer as string,
    event: r.event as string,
    queue: r.queue as string,
    deadLetterQueue: r.deadLetterQueue as string,
    service: r.service as string,
    at: typeof r.at === "number" ? r.at : 0,
  };
}

/** A dead-letter queue named by the operator, that exists now, and its depth. */
export interface ResolvedQueue {
  queue: string;
  depth: number;
}

/**
 * `<consumer>.<event>.dlq`, or the main queue `<consumer>.<event>` standing for its DLQ. A queue that does
 * not exist is bad input: "gone" when a subscription announced it, unknown otherwise.
 */
export async function resolveDeadLetterQueue(connection: ChannelModel, name: string): Promise<ResolvedQueue> {
  const queue = name.endsWith(".dlq") ? name : deadLetterQueueOf(name);
  const state = await queueState(connection, queue);
  if (state.exists) return { queue, depth: state.depth };
  const announced = (await discoverDeadLetterQueues(connection)).some((r) => r.deadLetterQueue === queue);
  throw new InputError(
    announced
      ? `${queue} is gone: announced on ${SUBSCRIPTIONS_STREAM} but deleted since`
      : `no dead-letter queue ${queue}: not announced on ${SUBSCRIPTIONS_STREAM} and no such queue`,
  );
}
