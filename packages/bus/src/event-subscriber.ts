import { type EventDescriptor, isAppError, toAppError, validatorOf } from "@fundraise/protocol";
import type { Channel, ChannelModel, ConsumeMessage, Message, Options } from "amqplib";
import type { Logger } from "pino";
import type { EventHandler, SubscribeOptions } from "./bus.ts";
import { decodeBody } from "./codec.ts";
import { brokerUnavailable, type ConnectionManager } from "./connection.ts";
import { type ConsumerRole, type Consumers, messageContext, safeAck, safeNack } from "./consumers.ts";
import type { EventPublisher } from "./event-publisher.ts";
import {
  carriedHeaders,
  compactHeaders,
  Header,
  type Headers,
  numberHeader,
  stringHeader,
} from "./headers.ts";
import { type BusJournal, type DeliveryOutcome, deliveryId } from "./journal-hook.ts";
import { decideFailure, type RetryPolicy, resolveRetryPolicy, retryDelays } from "./retry.ts";
import {
  announceSubscription,
  declareSubscription,
  Exchanges,
  type QueueType,
  type SubscriptionTopology,
  subscriptionQueueOf,
} from "./topology.ts";
import { processSpan } from "./trace-context.ts";

export interface EventSubscriberOptions {
  log: Logger;
  service: string;
  /** Where each handling of an event is recorded; undefined with the journal off. */
  journal: BusJournal | undefined;
  prefetch: number;
  publishTimeoutMs: number;
  manager: ConnectionManager;
  consumers: Consumers;
  /** Moves failed events on to the retry queues and the dead-letter exchange. */
  publisher: EventPublisher;
  isClosing: () => boolean;
}

/** The consumer of one subscription queue, `<consumer>.<event>`. */
interface SubscriptionRole extends ConsumerRole {
  consumer: string;
  descriptor: EventDescriptor;
  handler: EventHandler<EventDescriptor>;
  policy: RetryPolicy;
  queueType: QueueType;
  prefetch: number;
  topology: SubscriptionTopology | undefined;
  /** Announced again with its first dead letter in this process (see deadLetter). */
  announcedDeadLetter?: boolean;
}

const MAX_ERROR_HEADER_CHARS = 1000;

/** Subscribes: hands each event to its handler, retries a failed one after a delay, dead-letters a hopeless one. */
export class EventSubscriber {
  private readonly subscriptions = new Map<string, SubscriptionRole>();

  constructor(private readonly bus: EventSubscriberOptions) {}

  roles(): SubscriptionRole[] {
    return [...this.subscriptions.values()];
  }

  async subscribe<D extends EventDescriptor>(
    consumer: string,
    descriptor: D,
    handler: EventHandler<D>,
    options: SubscribeOptions = {},
  ): Promise<void> {
    if (this.bus.isClosing()) throw brokerUnavailable("The message bus is closed.");
    const queue = subscriptionQueueOf(consumer, descriptor.name);
    if (this.subscriptions.has(queue))
      throw new Error(`${consumer} already subscribes to ${descriptor.name}.`);
    const role: SubscriptionRole = {
      consumer,
      queue,
      descriptor,
      handler: handler as unknown as EventHandler<EventDescriptor>,
      policy: resolveRetryPolicy(options),
      queueType: options.queueType ?? "quorum",
      prefetch: options.prefetch ?? this.bus.prefetch,
      topology: undefined,
      channel: undefined,
      consumerTag: undefined,
      generation: 0,
      idle: () => false,
      setUp: (connection, generation) => this.setUp(role, connection, generation),
    };
    this.subscriptions.set(queue, role);
    try {
      await this.bus.consumers.serial(async () => {
        const connection = await this.bus.manager.waitConnected(this.bus.publishTimeoutMs);
        if (!role.channel || role.generation !== this.bus.manager.generation) {
          await role.setUp(connection, this.bus.manager.generation);
        }
      });
    } catch (error) {
      this.subscriptions.delete(queue);
      throw error;
    }
    this.bus.log.info({ event: descriptor.name, queue }, "subscribed");
  }

  private setUp(role: SubscriptionRole, connection: ChannelModel, generation: number): Promise<void> {
    return this.bus.consumers.consume(role, connection, generation, {
      prefetch: role.prefetch,
      channelErrorMessage: "consumer channel error",
      declare: async (channel) => {
        role.topology = await declareSubscription(
          channel,
          role.consumer,
          role.descriptor.name,
          role.queueType,
          retryDelays(role.policy),
        );
        this.announce(role, channel);
      },
      handle: (channel, message) => this.handleEvent(role, channel, message),
    });
  }

  private announce(role: SubscriptionRole, channel: Channel): void {
    if (!role.topology) return;
    try {
      announceSubscription(channel, {
        consumer: role.consumer,
        event: role.descriptor.name,
        queue: role.queue,
        deadLetterQueue: role.topology.deadLetterQueue,
        service: this.bus.service,
        at: Date.now(),
      });
    } catch (error) {
      this.bus.log.debug({ err: error, queue: role.queue }, "subscription not announced");
    }
  }

  private async handleEvent(
    role: SubscriptionRole,
    channel: Channel,
    message: ConsumeMessage,
  ): Promise<void> {
    const started = Date.now();
    const attempt = Math.max(1, Math.floor(numberHeader(message.properties.headers, Header.ATTEMPT) ?? 1));
    const messageId = typeof message.properties.messageId === "string" ? message.properties.messageId : "";
    const ctx = messageContext(
      this.bus.log,
      message.properties,
      { event: role.descriptor.name, consumer: role.consumer, messageId, attempt },
      attempt,
      deliveryId(messageId, role.consumer, attempt, roundOf(message)),
    );
    let duplicate = false;
    ctx.markDuplicate = () => {
      duplicate = true;
    };
    const span = processSpan(role.descriptor.name, role.consumer, attempt, ctx.traceparent);
    ctx.traceparent = span.traceparent;
    const journal = (outcome: DeliveryOutcome, extra: Record<string, unknown> = {}) =>
      this.bus.journal?.record({
        kind: "delivery",
        id: ctx.causedBy,
        name: role.descriptor.name,
        at: Date.now(),
        requestId: ctx.requestId,
        traceparent: ctx.traceparent,
        messageId,
        summary: {
          consumer: role.consumer,
          queue: role.queue,
          attempt,
          outcome,
          durationMs: Date.now() - started,
          ...extra,
        },
      });
    let payload: unknown;
    try {
      payload = validatorOf(role.descriptor.payload).assert(
        decodeBody(message.content, message.properties.contentType),
        `${role.descriptor.name} event`,
      );
    } catch (error) {
      ctx.log.warn({ err: error }, "invalid event: dead-lettered without a retry");
      span.end(error);
      const moved = await this.deadLetter(role, channel, message, attempt, error);
      journal(moved ? "dead-lettered" : "requeued", { error: errorSummary(error) });
      return;
    }
    try {
      await span.run(() => role.handler(payload as never, ctx));
    } catch (error) {
      span.end(error);
      const decision = decideFailure(role.policy, attempt, error);
      if (decision.action === "retry") {
        ctx.log.warn({ err: error, retryInMs: decision.delayMs }, "event handler failed; will retry");
        const moved = await this.retry(role, channel, message, decision.nextAttempt, decision.delayMs, error);
        journal(moved ? "retried" : "requeued", { error: errorSummary(error), retryInMs: decision.delayMs });
      } else {
        ctx.log.error({ err: error }, "event handler failed; dead-lettered");
        const moved = await this.deadLetter(role, channel, message, attempt, error);
        journal(moved ? "dead-lettered" : "requeued", { error: errorSummary(error) });
      }
      return;
    }
    span.end();
    safeAck(this.bus.log, channel, message);
    journal(duplicate ? "duplicate" : "acked");
  }

  /** Moves a failed event to its retry queue: false when it could not (it was requeued instead). */
  private async retry(
    role: SubscriptionRole,
    channel: Channel,
    message: ConsumeMessage,
    nextAttempt: number,
    delayMs: number,
    error: unknown,
  ): Promise<boolean> {
    const retryQueue = role.topology?.retryQueues.get(delayMs);
    if (!retryQueue) {
      safeNack(this.bus.log, channel, message, true);
      return false;
    }
    const headers = {
      ...carriedHeaders(message.properties.headers),
      ...failureHeaders(error),
      [Header.ATTEMPT]: nextAttempt,
      [Header.ORIGINAL_ROUTING_KEY]: originalRoutingKey(message),
    };
    return this.forward(channel, message, "", retryQueue, headers);
  }

  /** Moves a hopeless event to its dead-letter queue: false when it could not (it was requeued instead). */
  private async deadLetter(
    role: SubscriptionRole,
    channel: Channel,
    message: ConsumeMessage,
    attempt: number,
    error: unknown,
  ): Promise<boolean> {
    const headers = {
      ...carriedHeaders(message.properties.headers),
      ...failureHeaders(error),
      [Header.ATTEMPT]: attempt,
      [Header.DEAD_LETTERED_AT]: Date.now(),
      [Header.ORIGINAL_QUEUE]: role.queue,
      [Header.ORIGINAL_ROUTING_KEY]: originalRoutingKey(message),
    };
    const moved = await this.forward(channel, message, Exchanges.DLX, role.queue, headers);
    // Announced again with the first dead letter of a run: a consumer that died right after its set-up,
    // whose announcement was lost with it, is found by `pnpm dlq` all the same.
    if (moved && role.topology && !role.announcedDeadLetter) {
      role.announcedDeadLetter = true;
      this.announce(role, channel);
    }
    return moved;
  }

  /** Moves a message on (retry queue, DLQ): the copy is confirmed before the original is acknowledged. */
  private async forward(
    channel: Channel,
    message: ConsumeMessage,
    exchange: string,
    routingKey: string,
    headers: Headers,
  ): Promise<boolean> {
    try {
      await this.bus.publisher.publishConfirmed(
        exchange,
        routingKey,
        message.content,
        copyProperties(message, headers),
      );
    } catch (error) {
      this.bus.log.error(
        { err: error, exchange, routingKey },
        "cannot move a failed event on; it will be redelivered",
      );
      safeNack(this.bus.log, channel, message, true);
      return false;
    }
    safeAck(this.bus.log, channel, message);
    return true;
  }
}

/** What tells this handling from an earlier one of the same attempt (deliveryId's `round`). */
function roundOf(message: ConsumeMessage): string | undefined {
  const headers = message.properties.headers;
  const redriven = numberHeader(headers, Header.REDRIVEN_AT);
  if (redriven !== undefined) return `redriven-${redriven}`;
  const replayed =
    stringHeader(headers, Header.REPLAYED_FROM) ?? numberHeader(headers, Header.REPLAYED_FROM_OFFSET);
  if (replayed !== undefined) return `replayed-${replayed}`;
  if (message.fields.redelivered) return `redelivered-${Date.now()}`;
  return undefined;
}

/** A failure as a delivery's journal entry tells it. */
function errorSummary(error: unknown): { message: string; kind: string; code: string } {
  const headers = failureHeaders(error);
  return {
    message: String(headers[Header.LAST_ERROR]),
    kind: String(headers[Header.LAST_ERROR_KIND]),
    code: String(headers[Header.LAST_ERROR_CODE]),
  };
}

/** What went wrong, for the operator reading a retried or dead-lettered message. */
export function failureHeaders(error: unknown): Headers {
  const appError = toAppError(error);
  const cause = appError.cause;
  const message =
    isAppError(error) || !(cause instanceof Error) ? appError.message : `${cause.name}: ${cause.message}`;
  return {
    [Header.LAST_ERROR]: message.slice(0, MAX_ERROR_HEADER_CHARS),
    [Header.LAST_ERROR_KIND]: appError.kind,
    [Header.LAST_ERROR_CODE]: appError.code,
  };
}

function copyProperties(message: Message, headers: Headers): Options.Publish {
  return { ...persistentCopyOf(message), headers: compactHeaders(headers) };
}

/**
 * A received message's properties for a copy of it published again (a retry, a dead letter, a re-drive):
 * persistent, its ids, time, type and encoding; headers are the caller's to choose.
 */
export function persistentCopyOf(message: Message): Options.Publish {
  const p = message.properties;
  const properties: Options.Publish = { persistent: true };
  if (p.messageId !== undefined) properties.messageId = p.messageId;
  if (p.timestamp !== undefined) properties.timestamp = p.timestamp;
  if (p.type !== undefined) properties.type = p.type;
  if (p.contentType !== undefined) properties.contentType = p.contentType;
  if (p.contentEncoding !== undefined) properties.contentEncoding = p.contentEncoding;
  if (p.correlationId !== undefined) properties.correlationId = p.correlationId;
  if (p.appId !== undefined) properties.appId = p.appId;
  return properties;
}

/** A retried message comes back through the default exchange, keyed by queue: its first key is in a header. */
function originalRoutingKey(message: Message): string {
  return stringHeader(message.properties.headers, Header.ORIGINAL_ROUTING_KEY) ?? message.fields.routingKey;
}
