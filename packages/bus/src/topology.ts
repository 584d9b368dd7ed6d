import type { Channel } from "amqplib";

/**
 * Names and declarations of everything the bus puts on the broker. Every process declares what it uses,
 * idempotently, on every (re)connect: a broker that lost its state is rebuilt by its clients.
 */
export const Exchanges = {
  /** direct: routing key = RPC name, bound by the `<service>.rpc` queue of each service serving it. */
  RPC: "rpc",
  /** topic: routing key = event name, bound by `<consumer>.<event>` queues. */
  EVENTS: "events",
  /** direct: routing key = the main queue's name, bound by `<queue>.dlq`. */
  DLX: "dlx",
} as const;

export const REPLY_TO = "amq.rabbitmq.reply-to";

/** Redeliveries (crashes, lost connections) a quorum queue tolerates before dead-lettering on its own. */
export const QUORUM_DELIVERY_LIMIT = 20;

export type QueueType = "quorum" | "classic";

export const rpcQueueOf = (service: string): string => `${service}.rpc`;
export const subscriptionQueueOf = (consumer: string, event: string): string => `${consumer}.${event}`;
export const deadLetterQueueOf = (queue: string): string => `${queue}.dlq`;
export const retryQueueOf = (queue: string, delayMs: number): string => `${queue}.retry.${delayMs}ms`;

export async function declareExchanges(channel: Channel): Promise<void> {
  await channel.assertExchange(Exchanges.RPC, "direct", { durable: true });
  await channel.assertExchange(Exchanges.EVENTS, "topic", { durable: true });
  await channel.assertExchange(Exchanges.DLX, "direct", { durable: true });
  await channel.assertQueue(SUBSCRIPTIONS_STREAM, {
    durable: true,
    arguments: { ...SUBSCRIPTIONS_ARGUMENTS },
  });
}

/**
 * Every subscription announces itself here when it is set up (a JSON `SubscriptionRecord`): AMQP cannot
 * list queues, so this is how `pnpm dlq` finds every dead-letter queue, those of consumers long gone too.
 */
export const SUBSCRIPTIONS_STREAM = "bus.subscriptions";
/** Kept by size only: a few hundred bytes per process start; the latest of each queue is what counts. */
const SUBSCRIPTIONS_ARGUMENTS = {
  "x-queue-type": "stream",
  "x-max-length-bytes": 64 * 1024 ** 2,
  "x-stream-max-segment-size-bytes": 4 * 1024 ** 2,
} as const;

export interface SubscriptionRecord {
  consumer: string;
  event: string;
  queue: string;
  deadLetterQueue: string;
  service: string;
  /** ms */
  at: number;
}

/** Announces a subscription on `channel` (no confirm: it is announced again on every set-up). */
export function announceSubscription(channel: Channel, record: SubscriptionRecord): void {
  channel.sendToQueue(SUBSCRIPTIONS_STREAM, Buffer.from(JSON.stringify(record)), {
    contentType: "application/json",
    persistent: true,
    type: "subscription",
  });
}

/**
 * Non-durable and auto-deleted: the queue exists exactly while an instance consumes it, so a call to a
 * service with no running instance is unroutable and the caller learns it at once (mandatory return).
 */
export async function declareRpcQueue(
  channel: Channel,
  service: string,
  names: Iterable<string>,
): Promise<string> {
  const queue = rpcQueueOf(service);
  await channel.assertQueue(queue, { durable: false, autoDelete: true, exclusive: false });
  for (const name of names) await channel.bindQueue(queue, Exchanges.RPC, name);
  return queue;
}

export interface SubscriptionTopology {
  queue: string;
  deadLetterQueue: string;
  retryQueues: Map<number, string>;
}

/**
 * `<consumer>.<event>` bound to `events`, its `.dlq`, and one retry queue per delay. A retry queue holds
 * messages for its TTL, then dead-letters them through the default exchange back to the main queue only,
 * so a retry never reaches the other consumers of the event.
 */
export async function declareSubscription(
  channel: Channel,
  consumer: string,
  event: string,
  queueType: QueueType,
  delays: readonly number[],
): Promise<SubscriptionTopology> {
  const queue = subscriptionQueueOf(consumer, event);
  const deadLetterQueue = deadLetterQueueOf(queue);
  const typeArguments: Record<string, unknown> = { "x-queue-type": queueType };
  await channel.assertQueue(deadLetterQueue, { durable: true, arguments: typeArguments });
  await channel.bindQueue(deadLetterQueue, Exchanges.DLX, queue);
  await channel.assertQueue(queue, {
    durable: true,
    arguments: {
      ...typeArguments,
      // The safety net: what the broker dead-letters itself (redelivery limit) lands in the same DLQ.
      "x-dead-letter-exchange": Exchanges.DLX,
      "x-dead-letter-routing-key": queue,
      ...(queueType === "quorum" ? { "x-delivery-limit": QUORUM_DELIVERY_LIMIT } : {}),
    },
  });
  await channel.bindQueue(queue, Exchanges.EVENTS, event);
  const retryQueues = new Map<number, string>();
  for (const delay of delays) {
    const retryQueue = retryQueueOf(queue, delay);
    await channel.assertQueue(retryQueue, {
      durable: true,
      arguments: {
        "x-queue-type": "classic",
        "x-message-ttl": delay,
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": queue,
      },
    });
    retryQueues.set(delay, retryQueue);
  }
  return { queue, deadLetterQueue, retryQueues };
}
