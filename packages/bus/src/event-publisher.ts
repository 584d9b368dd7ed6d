import { randomUUID } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { ErrorCode, type EventDescriptor, errors, type PayloadOf, validatorOf } from "@fundraise/protocol";
import type { ChannelModel, ConfirmChannel, Options } from "amqplib";
import type { Logger } from "pino";
import type { PublishOptions } from "./bus.ts";
import { ChannelHolder } from "./channel-holder.ts";
import { encodeBody } from "./codec.ts";
import { brokerUnavailable, type ConnectionManager } from "./connection.ts";
import { amqpTimestamp, compactHeaders, Header, type MessageKind } from "./headers.ts";
import { uuidv7 } from "./ids.ts";
import type { BusJournal } from "./journal-hook.ts";
import { Exchanges } from "./topology.ts";
import { publishSpan } from "./trace-context.ts";

export interface EventPublisherOptions {
  log: Logger;
  /** Where published events are recorded; undefined with the journal off. */
  journal: BusJournal | undefined;
  service: string;
  publishTimeoutMs: number;
  manager: ConnectionManager;
  isClosing: () => boolean;
}

/**
 * Publishes events (and the subscriber's retries and dead letters) on a confirm channel: a publish resolves
 * once the broker has taken the message.
 */
export class EventPublisher extends ChannelHolder<ConfirmChannel> {
  constructor(private readonly bus: EventPublisherOptions) {
    super();
  }

  async publish<D extends EventDescriptor>(
    descriptor: D,
    payload: PayloadOf<D>,
    options: PublishOptions = {},
  ) {
    validatorOf(descriptor.payload).assert(payload, `${descriptor.name} event`);
    if (this.bus.isClosing()) throw brokerUnavailable("The message bus is closed.");
    const { body, contentType } = encodeBody(payload);
    const messageId = options.messageId ?? randomUUID();
    const span = publishSpan(descriptor.name, options.traceparent);
    const requestId = options.requestId ?? uuidv7();
    const properties: Options.Publish = {
      persistent: true,
      messageId,
      timestamp: amqpTimestamp(),
      type: descriptor.name,
      contentType,
      headers: compactHeaders({
        [Header.REQUEST_ID]: requestId,
        [Header.TRACEPARENT]: span.traceparent,
        [Header.KIND]: "event" satisfies MessageKind,
        [Header.PUBLISHED_BY]: this.bus.service,
      }),
    };
    try {
      await this.publishConfirmed(Exchanges.EVENTS, descriptor.name, body, properties);
    } catch (error) {
      span.end(error);
      throw error;
    }
    span.end();
    // Journaled once the broker holds it: a refused publish is retried by the outbox, not recorded.
    this.bus.journal?.record({
      kind: "event",
      id: messageId,
      name: descriptor.name,
      at: Date.now(),
      requestId,
      traceparent: span.traceparent,
      causedBy: options.causedBy,
      messageId,
      message: { properties, body },
      schema: descriptor.payload,
      value: payload,
    });
    this.bus.log.debug({ event: descriptor.name, messageId, bytes: body.length }, "event published");
  }

  /**
   * Publishes and waits for the broker's confirm, across reconnects, until `publishTimeoutMs`. A message whose
   * confirm was lost with a connection is published again: duplicates are possible (consumers dedupe by
   * messageId), losses are not.
   */
  async publishConfirmed(
    exchange: string,
    routingKey: string,
    body: Buffer,
    properties: Options.Publish,
  ): Promise<void> {
    const deadline = Date.now() + this.bus.publishTimeoutMs;
    let lastError: unknown;
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0 || this.bus.manager.state === "closed") {
        throw errors.unavailable(
          ErrorCode.BROKER_UNAVAILABLE,
          "The message broker did not accept the message.",
          {
            cause: lastError,
          },
        );
      }
      let channel: ConfirmChannel | undefined;
      try {
        channel = await this.getChannel(remaining);
        await confirmedPublish(channel, exchange, routingKey, body, properties, remaining);
        return;
      } catch (error) {
        lastError = error;
        if (channel && this.channel === channel && !(error instanceof ConfirmTimeout)) {
          // A publish can fail before the channel's close event arrives: never hand out that channel again.
          this.forget(channel);
          channel.close().catch(() => undefined);
        }
        this.bus.log.debug({ err: error, exchange, routingKey }, "publish not confirmed; retrying");
        await delay(Math.min(200, Math.max(0, deadline - Date.now())));
      }
    }
  }

  /** The confirm channel events go out on. */
  protected async create(connection: ChannelModel): Promise<ConfirmChannel> {
    const channel = await connection.createConfirmChannel();
    channel.on("error", (error: Error) => this.bus.log.warn({ err: error }, "publisher channel error"));
    return channel;
  }

  private async getChannel(timeoutMs: number): Promise<ConfirmChannel> {
    if (this.channel) return this.channel;
    const connection = await this.bus.manager.waitConnected(timeoutMs);
    return this.openOnce(connection);
  }
}

class ConfirmTimeout extends Error {}

function confirmedPublish(
  channel: ConfirmChannel,
  exchange: string,
  routingKey: string,
  body: Buffer,
  properties: Options.Publish,
  timeoutMs: number,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new ConfirmTimeout("no publisher confirm in time")), timeoutMs);
    try {
      channel.publish(exchange, routingKey, body, properties, (error) => {
        clearTimeout(timer);
        if (error) reject(error);
        else resolve();
      });
    } catch (error) {
      clearTimeout(timer);
      reject(error);
    }
  });
}
