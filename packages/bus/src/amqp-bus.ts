import { randomUUID } from "node:crypto";
import {
  type AppError,
  ErrorCode,
  type EventDescriptor,
  errors,
  isAppError,
  type PayloadOf,
  type RequestOf,
  type ResponseOf,
  type RpcDescriptor,
  toAppError,
  validatorOf,
} from "@fundraise/protocol";
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage, Message, Options } from "amqplib";
import pino, { type Logger } from "pino";
import type {
  Bus,
  CallOptions,
  EventHandler,
  MessageContext,
  PublishOptions,
  RpcHandler,
  SubscribeOptions,
} from "./bus.ts";
import { decodeBody, encodeBody } from "./codec.ts";
import { ConnectionManager } from "./connection.ts";
import {
  amqpTimestamp,
  carriedHeaders,
  compactHeaders,
  errorReply,
  Header,
  type Headers,
  type MessageKind,
  numberHeader,
  type ReplyParts,
  readReply,
  stringHeader,
  successReply,
} from "./headers.ts";
import { decideFailure, type RetryPolicy, resolveRetryPolicy, retryDelays } from "./retry.ts";
import {
  declareExchanges,
  declareRpcQueue,
  declareSubscription,
  Exchanges,
  type QueueType,
  REPLY_TO,
  rpcQueueOf,
  type SubscriptionTopology,
  subscriptionQueueOf,
} from "./topology.ts";

export interface AmqpBusOptions {
  /** amqp://user:pass@host:port/vhost; a `heartbeat` query parameter is added when absent. */
  url: string;
  /** This process's service name: in logs, the broker's connection name and the `x-published-by` header. */
  service: string;
  logger?: Logger;
  /** Unacknowledged messages per consumer, i.e. handler concurrency per queue (default 10). */
  prefetch?: number;
  /** Copy RPC requests and replies to the journal and declare it (default true). */
  journal?: boolean;
  /** Timeout of a call whose descriptor and options name none (default 5000). */
  defaultTimeoutMs?: number;
  /** How long publish() and serve()/subscribe() wait for a lost broker to come back (default 10 s). */
  publishTimeoutMs?: number;
  /** How long createAmqpBus waits for the first connection (default 30 s). */
  connectTimeoutMs?: number;
  /** How long close() waits for running handlers (default 10 s). */
  closeTimeoutMs?: number;
  /** Cap of the reconnect backoff (default 5 s). */
  maxReconnectDelayMs?: number;
}

export interface AmqpBus extends Bus {
  readonly service: string;
  /** Resolves once the broker connection is up; `unavailable` after `timeoutMs`. */
  waitForConnection(timeoutMs?: number): Promise<void>;
}

interface PendingCall {
  service: string;
  name: string;
  resolve: (value: unknown) => void;
  reject: (error: AppError) => void;
  timer: NodeJS.Timeout;
}

interface ServerRole {
  service: string;
  queue: string;
  handlers: Map<string, { descriptor: RpcDescriptor; handler: RpcHandler<RpcDescriptor> }>;
  channel: Channel | undefined;
  consumerTag: string | undefined;
  generation: number;
}

interface SubscriptionRole {
  consumer: string;
  queue: string;
  descriptor: EventDescriptor;
  handler: EventHandler<EventDescriptor>;
  policy: RetryPolicy;
  queueType: QueueType;
  prefetch: number;
  topology: SubscriptionTopology | undefined;
  channel: Channel | undefined;
  consumerTag: string | undefined;
  generation: number;
}

type Role = ServerRole | SubscriptionRole;

const MAX_ERROR_HEADER_CHARS = 1000;
const ROLE_RECOVERY_DELAY_MS = 1000;

/**
 * Connects, declares the topology and returns the Bus. Rejects with `unavailable` BROKER_UNAVAILABLE when
 * the broker cannot be reached within `connectTimeoutMs`.
 */
export async function createAmqpBus(options: AmqpBusOptions): Promise<AmqpBus> {
  const bus = new AmqpBusImpl(options);
  await bus.start();
  return bus;
}

class AmqpBusImpl implements AmqpBus {
  readonly service: string;
  private readonly log: Logger;
  private readonly manager: ConnectionManager;
  private readonly journal: boolean;
  private readonly prefetch: number;
  private readonly defaultTimeoutMs: number;
  private readonly publishTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private readonly closeTimeoutMs: number;

  private publisher: ConfirmChannel | undefined;
  private publisherOpening: Promise<ConfirmChannel> | undefined;
  private rpcChannel: Channel | undefined;
  private rpcOpening: Promise<Channel> | undefined;
  private readonly pending = new Map<string, PendingCall>();
  private readonly servers = new Map<string, ServerRole>();
  private readonly subscriptions = new Map<string, SubscriptionRole>();
  private readonly inflight = new Set<Promise<void>>();
  // Declarations and consumer set-ups run one at a time, so two serve() calls never open two consumers.
  private serialTail: Promise<unknown> = Promise.resolve();
  private closing: Promise<void> | undefined;

  constructor(options: AmqpBusOptions) {
    this.service = options.service;
    this.log = (options.logger ?? pino({ level: "silent" })).child({
      component: "bus",
      service: options.service,
    });
    this.journal = options.journal ?? true;
    this.prefetch = options.prefetch ?? 10;
    this.defaultTimeoutMs = options.defaultTimeoutMs ?? 5000;
    this.publishTimeoutMs = options.publishTimeoutMs ?? 10_000;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 30_000;
    this.closeTimeoutMs = options.closeTimeoutMs ?? 10_000;
    this.manager = new ConnectionManager({
      url: options.url,
      connectionName: `${options.service}:${process.pid}`,
      logger: this.log,
      maxBackoffMs: options.maxReconnectDelayMs ?? 5000,
      setup: (connection, generation) => this.setup(connection, generation),
      onLost: () => this.onConnectionLost(),
    });
  }

  async start(): Promise<void> {
    try {
      await this.manager.start(this.connectTimeoutMs);
    } catch (error) {
      await this.manager.close();
      throw error;
    }
  }

  isConnected(): boolean {
    return this.manager.state === "connected";
  }

  async waitForConnection(timeoutMs = this.publishTimeoutMs): Promise<void> {
    await this.manager.waitConnected(timeoutMs);
  }

  // ---------------------------------------------------------------------------------------------- RPC client

  async call<D extends RpcDescriptor>(
    descriptor: D,
    request: RequestOf<D>,
    options: CallOptions = {},
  ): Promise<ResponseOf<D>> {
    validatorOf(descriptor.request).assert(request, `${descriptor.name} request`);
    if (this.closing) throw this.brokerUnavailable("The message bus is closed.");
    const now = Date.now();
    let deadline = now + (options.timeoutMs ?? descriptor.timeoutMs ?? this.defaultTimeoutMs);
    if (options.deadline !== undefined) deadline = Math.min(deadline, options.deadline);
    if (deadline <= now) throw this.rpcTimeout(descriptor.service);
    // Fails fast while disconnected: waiting would only eat the caller's deadline.
    const channel = await this.getRpcChannel();
    const correlationId = randomUUID();
    const requestId = options.requestId ?? randomUUID();
    const { body, contentType } = encodeBody(request);
    const headers = compactHeaders({
      [Header.REQUEST_ID]: requestId,
      [Header.DEADLINE]: deadline,
      [Header.TRACEPARENT]: options.traceparent,
      [Header.KIND]: "rpc-request" satisfies MessageKind,
      [Header.PUBLISHED_BY]: this.service,
    });
    const properties: Options.Publish = {
      correlationId,
      replyTo: REPLY_TO,
      // The broker drops a request nobody waits for any more instead of handing it to a server.
      expiration: String(Math.max(1, deadline - now)),
      messageId: randomUUID(),
      timestamp: amqpTimestamp(now),
      type: descriptor.name,
      contentType,
      headers,
    };
    return new Promise<ResponseOf<D>>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(correlationId);
        reject(this.rpcTimeout(descriptor.service));
      }, deadline - now);
      this.pending.set(correlationId, {
        service: descriptor.service,
        name: descriptor.name,
        resolve: resolve as (value: unknown) => void,
        reject,
        timer,
      });
      try {
        channel.publish(Exchanges.RPC, descriptor.name, body, { ...properties, mandatory: true });
      } catch (error) {
        this.settle(correlationId)?.reject(
          errors.unavailable(ErrorCode.BROKER_UNAVAILABLE, "The message broker is not reachable.", {
            cause: error,
          }),
        );
        return;
      }
      if (this.journal) {
        // A stream keeps what it is given: no expiry, and no reply address that would be dead on replay.
        const { replyTo: _replyTo, expiration: _expiration, ...copy } = properties;
        this.journalCopy(channel, descriptor.name, body, copy);
      }
    });
  }

  private async getRpcChannel(): Promise<Channel> {
    if (this.rpcChannel) return this.rpcChannel;
    const connection = this.manager.connection;
    if (!connection) throw this.brokerUnavailable();
    this.rpcOpening ??= this.openRpcChannel(connection).finally(() => {
      this.rpcOpening = undefined;
    });
    try {
      return await this.rpcOpening;
    } catch (error) {
      throw errors.unavailable(ErrorCode.BROKER_UNAVAILABLE, "The message broker is not reachable.", {
        cause: error,
      });
    }
  }

  private async openRpcChannel(connection: ChannelModel): Promise<Channel> {
    const channel = await connection.createChannel();
    channel.on("error", (error: Error) => this.log.warn({ err: error }, "RPC client channel error"));
    channel.on("return", (message: Message) => this.onReturn(message));
    channel.on("close", () => {
      if (this.rpcChannel !== channel) return;
      this.rpcChannel = undefined;
      // Replies come back on this channel only: whatever was in flight will never be answered.
      this.failPending("The connection to the message broker was lost.");
    });
    // Direct reply-to: no reply queue to declare or clean up; the consumer must exist before the first call.
    await channel.consume(REPLY_TO, (message) => this.onReply(message), { noAck: true });
    this.rpcChannel = channel;
    return channel;
  }

  private onReturn(message: Message): void {
    if (message.fields.exchange !== Exchanges.RPC) return;
    const call = this.settle(message.properties.correlationId);
    if (!call) return;
    this.log.debug({ rpc: call.name }, "RPC request unroutable: no instance serves it");
    call.reject(
      errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, `The ${call.service} service is not available.`),
    );
  }

  private onReply(message: ConsumeMessage | null): void {
    if (!message) return;
    const call = this.settle(message.properties.correlationId);
    if (!call) {
      this.log.debug({ rpc: message.properties.type }, "late RPC reply ignored (the caller gave up)");
      return;
    }
    let outcome: ReturnType<typeof readReply>;
    try {
      outcome = readReply(
        decodeBody(message.content, message.properties.contentType),
        message.properties.headers,
      );
    } catch (error) {
      this.log.error({ err: error, rpc: call.name }, "undecodable RPC reply");
      call.reject(errors.internal(ErrorCode.INTERNAL, "An unexpected error occurred.", { cause: error }));
      return;
    }
    if ("error" in outcome) call.reject(outcome.error);
    else call.resolve(outcome.data);
  }

  private settle(correlationId: unknown): PendingCall | undefined {
    if (typeof correlationId !== "string") return undefined;
    const call = this.pending.get(correlationId);
    if (!call) return undefined;
    this.pending.delete(correlationId);
    clearTimeout(call.timer);
    return call;
  }

  private failPending(message: string): void {
    const calls = [...this.pending.values()];
    this.pending.clear();
    for (const call of calls) {
      clearTimeout(call.timer);
      call.reject(errors.unavailable(ErrorCode.BROKER_UNAVAILABLE, message));
    }
    if (calls.length > 0)
      this.log.warn({ calls: calls.length }, "failed in-flight calls: broker connection lost");
  }

  private rpcTimeout(service: string): AppError {
    return errors.timeout(ErrorCode.RPC_TIMEOUT, `The ${service} service did not answer in time.`);
  }

  private brokerUnavailable(message = "The message broker is not reachable."): AppError {
    return errors.unavailable(ErrorCode.BROKER_UNAVAILABLE, message);
  }

  // ---------------------------------------------------------------------------------------------- RPC server

  async serve<D extends RpcDescriptor>(descriptor: D, handler: RpcHandler<D>): Promise<void> {
    if (this.closing) throw this.brokerUnavailable("The message bus is closed.");
    let role = this.servers.get(descriptor.service);
    if (!role) {
      role = {
        service: descriptor.service,
        queue: rpcQueueOf(descriptor.service),
        handlers: new Map(),
        channel: undefined,
        consumerTag: undefined,
        generation: 0,
      };
      this.servers.set(descriptor.service, role);
    }
    if (role.handlers.has(descriptor.name))
      throw new Error(`${descriptor.name} is already served by this bus.`);
    role.handlers.set(descriptor.name, {
      descriptor,
      handler: handler as unknown as RpcHandler<RpcDescriptor>,
    });
    const served = role;
    try {
      await this.serial(async () => {
        const connection = await this.manager.waitConnected(this.publishTimeoutMs);
        if (served.channel && served.generation === this.manager.generation) {
          await served.channel.bindQueue(served.queue, Exchanges.RPC, descriptor.name);
        } else {
          await this.setupServer(served, connection, this.manager.generation);
        }
      });
    } catch (error) {
      served.handlers.delete(descriptor.name);
      throw error;
    }
    this.log.info({ rpc: descriptor.name, queue: served.queue }, "serving RPC");
  }

  private async setupServer(role: ServerRole, connection: ChannelModel, generation: number): Promise<void> {
    const channel = await connection.createChannel();
    channel.on("error", (error: Error) =>
      this.log.warn({ err: error, queue: role.queue }, "RPC server channel error"),
    );
    channel.on("close", () => this.onRoleChannelClosed(role, channel));
    let consumerTag: string;
    try {
      await channel.prefetch(this.prefetch);
      await declareRpcQueue(channel, role.service, role.handlers.keys());
      ({ consumerTag } = await channel.consume(
        role.queue,
        (message) => this.onRequest(role, channel, message),
        {
          noAck: false,
        },
      ));
    } catch (error) {
      channel.close().catch(() => undefined);
      throw error;
    }
    role.channel = channel;
    role.consumerTag = consumerTag;
    role.generation = generation;
  }

  private onRequest(role: ServerRole, channel: Channel, message: ConsumeMessage | null): void {
    if (!message) {
      this.onConsumerCancelled(role, channel);
      return;
    }
    this.track(this.handleRequest(role, channel, message));
  }

  private async handleRequest(role: ServerRole, channel: Channel, message: ConsumeMessage): Promise<void> {
    const { properties } = message;
    const name = typeof properties.type === "string" ? properties.type : message.fields.routingKey;
    const ctx = this.context(properties, { rpc: name }, 1);
    if (ctx.deadline !== undefined && ctx.deadline <= Date.now()) {
      ctx.log.warn({ deadline: ctx.deadline }, "dropped an RPC request past its deadline");
      this.safeAck(channel, message);
      return;
    }
    let reply: ReplyParts;
    try {
      const entry = role.handlers.get(name);
      // Reaching an instance that does not serve the name means another instance bound it (a mixed
      // deployment, or a binding left by a stopped instance): the service as a whole is not ready for it.
      if (!entry) {
        throw errors.unavailable(
          ErrorCode.SERVICE_UNAVAILABLE,
          `The ${role.service} service is not available.`,
        );
      }
      const request = validatorOf(entry.descriptor.request).assert(
        decodeBody(message.content, properties.contentType),
        `${name} request`,
      );
      const response = await entry.handler(request, ctx);
      const check = validatorOf(entry.descriptor.response);
      if (!check.check(response)) {
        ctx.log.error({ issues: check.issues(response) }, "RPC handler returned an invalid response");
        throw errors.internal(ErrorCode.INTERNAL, "An unexpected error occurred.");
      }
      reply = successReply(response);
    } catch (error) {
      const appError = toAppError(error);
      if (!isAppError(error)) ctx.log.error({ err: error }, "RPC handler failed");
      else if (appError.kind === "internal" && appError.cause !== undefined) {
        ctx.log.error({ err: appError }, "RPC handler failed");
      } else ctx.log.debug({ kind: appError.kind, code: appError.code }, "RPC answered with an error");
      reply = errorReply(appError);
    }
    this.sendReply(channel, message, name, ctx.requestId, reply);
    this.safeAck(channel, message);
  }

  private sendReply(
    channel: Channel,
    request: Message,
    name: string,
    requestId: string,
    reply: ReplyParts,
  ): void {
    const replyTo = request.properties.replyTo;
    let encoded: ReturnType<typeof encodeBody>;
    try {
      encoded = encodeBody(reply.envelope);
    } catch (error) {
      this.log.error({ err: error, rpc: name, requestId }, "cannot encode the RPC reply");
      encoded = encodeBody(
        errorReply(errors.internal(ErrorCode.INTERNAL, "An unexpected error occurred.")).envelope,
      );
    }
    const properties: Options.Publish = {
      correlationId: request.properties.correlationId,
      messageId: randomUUID(),
      timestamp: amqpTimestamp(),
      type: name,
      contentType: encoded.contentType,
      headers: compactHeaders({
        ...reply.headers,
        [Header.REQUEST_ID]: requestId,
        [Header.KIND]: "rpc-reply" satisfies MessageKind,
        [Header.PUBLISHED_BY]: this.service,
      }),
    };
    // No replyTo: a replayed request, executed for its effect; nobody waits for the answer.
    if (typeof replyTo === "string" && replyTo !== "") {
      try {
        channel.sendToQueue(replyTo, encoded.body, properties);
      } catch (error) {
        this.log.warn({ err: error, rpc: name, requestId }, "cannot send the RPC reply");
        return;
      }
    }
    if (this.journal) this.journalCopy(channel, name, encoded.body, properties);
  }

  private journalCopy(channel: Channel, routingKey: string, body: Buffer, properties: Options.Publish): void {
    try {
      channel.publish(Exchanges.JOURNAL, routingKey, body, properties);
    } catch (error) {
      this.log.debug({ err: error, routingKey }, "journal copy not published");
    }
  }

  // ---------------------------------------------------------------------------------------------- events

  async publish<D extends EventDescriptor>(
    descriptor: D,
    payload: PayloadOf<D>,
    options: PublishOptions = {},
  ) {
    validatorOf(descriptor.payload).assert(payload, `${descriptor.name} event`);
    if (this.closing) throw this.brokerUnavailable("The message bus is closed.");
    const { body, contentType } = encodeBody(payload);
    const messageId = options.messageId ?? randomUUID();
    await this.publishConfirmed(Exchanges.EVENTS, descriptor.name, body, {
      persistent: true,
      messageId,
      timestamp: amqpTimestamp(),
      type: descriptor.name,
      contentType,
      headers: compactHeaders({
        [Header.REQUEST_ID]: options.requestId ?? randomUUID(),
        [Header.TRACEPARENT]: options.traceparent,
        [Header.KIND]: "event" satisfies MessageKind,
        [Header.PUBLISHED_BY]: this.service,
      }),
    });
    this.log.debug({ event: descriptor.name, messageId, bytes: body.length }, "event published");
  }

  /**
   * Publishes and waits for the broker's confirm, across reconnects, until `publishTimeoutMs`. A message whose
   * confirm was lost with a connection is published again: duplicates are possible (consumers dedupe by
   * messageId), losses are not.
   */
  private async publishConfirmed(
    exchange: string,
    routingKey: string,
    body: Buffer,
    properties: Options.Publish,
  ): Promise<void> {
    const deadline = Date.now() + this.publishTimeoutMs;
    let lastError: unknown;
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0 || this.manager.state === "closed") {
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
        channel = await this.getPublisher(remaining);
        await confirmedPublish(channel, exchange, routingKey, body, properties, remaining);
        return;
      } catch (error) {
        lastError = error;
        if (channel && this.publisher === channel && !(error instanceof ConfirmTimeout)) {
          // A publish can fail before the channel's close event arrives: never hand out that channel again.
          this.publisher = undefined;
          channel.close().catch(() => undefined);
        }
        this.log.debug({ err: error, exchange, routingKey }, "publish not confirmed; retrying");
        await delay(Math.min(200, Math.max(0, deadline - Date.now())));
      }
    }
  }

  private async getPublisher(timeoutMs: number): Promise<ConfirmChannel> {
    if (this.publisher) return this.publisher;
    const connection = await this.manager.waitConnected(timeoutMs);
    this.publisherOpening ??= this.openPublisher(connection).finally(() => {
      this.publisherOpening = undefined;
    });
    return this.publisherOpening;
  }

  private async openPublisher(connection: ChannelModel): Promise<ConfirmChannel> {
    const channel = await connection.createConfirmChannel();
    channel.on("error", (error: Error) => this.log.warn({ err: error }, "publisher channel error"));
    channel.on("close", () => {
      if (this.publisher === channel) this.publisher = undefined;
    });
    this.publisher = channel;
    return channel;
  }

  async subscribe<D extends EventDescriptor>(
    consumer: string,
    descriptor: D,
    handler: EventHandler<D>,
    options: SubscribeOptions = {},
  ): Promise<void> {
    if (this.closing) throw this.brokerUnavailable("The message bus is closed.");
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
      prefetch: options.prefetch ?? this.prefetch,
      topology: undefined,
      channel: undefined,
      consumerTag: undefined,
      generation: 0,
    };
    this.subscriptions.set(queue, role);
    try {
      await this.serial(async () => {
        const connection = await this.manager.waitConnected(this.publishTimeoutMs);
        if (!role.channel || role.generation !== this.manager.generation) {
          await this.setupSubscription(role, connection, this.manager.generation);
        }
      });
    } catch (error) {
      this.subscriptions.delete(queue);
      throw error;
    }
    this.log.info({ event: descriptor.name, queue }, "subscribed");
  }

  private async setupSubscription(role: SubscriptionRole, connection: ChannelModel, generation: number) {
    const channel = await connection.createChannel();
    channel.on("error", (error: Error) =>
      this.log.warn({ err: error, queue: role.queue }, "consumer channel error"),
    );
    channel.on("close", () => this.onRoleChannelClosed(role, channel));
    let consumerTag: string;
    try {
      await channel.prefetch(role.prefetch);
      role.topology = await declareSubscription(
        channel,
        role.consumer,
        role.descriptor.name,
        role.queueType,
        retryDelays(role.policy),
      );
      ({ consumerTag } = await channel.consume(
        role.queue,
        (message) => this.onEvent(role, channel, message),
        {
          noAck: false,
        },
      ));
    } catch (error) {
      channel.close().catch(() => undefined);
      throw error;
    }
    role.channel = channel;
    role.consumerTag = consumerTag;
    role.generation = generation;
  }

  private onEvent(role: SubscriptionRole, channel: Channel, message: ConsumeMessage | null): void {
    if (!message) {
      this.onConsumerCancelled(role, channel);
      return;
    }
    this.track(this.handleEvent(role, channel, message));
  }

  private async handleEvent(
    role: SubscriptionRole,
    channel: Channel,
    message: ConsumeMessage,
  ): Promise<void> {
    const attempt = Math.max(1, Math.floor(numberHeader(message.properties.headers, Header.ATTEMPT) ?? 1));
    const ctx = this.context(
      message.properties,
      { event: role.descriptor.name, consumer: role.consumer },
      attempt,
    );
    ctx.log = ctx.log.child({ messageId: ctx.messageId, attempt });
    let payload: unknown;
    try {
      payload = validatorOf(role.descriptor.payload).assert(
        decodeBody(message.content, message.properties.contentType),
        `${role.descriptor.name} event`,
      );
    } catch (error) {
      ctx.log.warn({ err: error }, "invalid event: dead-lettered without a retry");
      await this.deadLetter(role, channel, message, attempt, error);
      return;
    }
    try {
      await role.handler(payload as never, ctx);
    } catch (error) {
      const decision = decideFailure(role.policy, attempt, error);
      if (decision.action === "retry") {
        ctx.log.warn({ err: error, retryInMs: decision.delayMs }, "event handler failed; will retry");
        await this.retry(role, channel, message, decision.nextAttempt, decision.delayMs, error);
      } else {
        ctx.log.error({ err: error }, "event handler failed; dead-lettered");
        await this.deadLetter(role, channel, message, attempt, error);
      }
      return;
    }
    this.safeAck(channel, message);
  }

  private async retry(
    role: SubscriptionRole,
    channel: Channel,
    message: ConsumeMessage,
    nextAttempt: number,
    delayMs: number,
    error: unknown,
  ): Promise<void> {
    const retryQueue = role.topology?.retryQueues.get(delayMs);
    if (!retryQueue) {
      this.safeNack(channel, message, true);
      return;
    }
    const headers = {
      ...carriedHeaders(message.properties.headers),
      ...failureHeaders(error),
      [Header.ATTEMPT]: nextAttempt,
      [Header.ORIGINAL_ROUTING_KEY]: originalRoutingKey(message),
    };
    await this.forward(channel, message, "", retryQueue, headers);
  }

  private async deadLetter(
    role: SubscriptionRole,
    channel: Channel,
    message: ConsumeMessage,
    attempt: number,
    error: unknown,
  ): Promise<void> {
    const headers = {
      ...carriedHeaders(message.properties.headers),
      ...failureHeaders(error),
      [Header.ATTEMPT]: attempt,
      [Header.DEAD_LETTERED_AT]: Date.now(),
      [Header.ORIGINAL_QUEUE]: role.queue,
      [Header.ORIGINAL_ROUTING_KEY]: originalRoutingKey(message),
    };
    await this.forward(channel, message, Exchanges.DLX, role.queue, headers);
  }

  /** Moves a message on (retry queue, DLQ): the copy is confirmed before the original is acknowledged. */
  private async forward(
    channel: Channel,
    message: ConsumeMessage,
    exchange: string,
    routingKey: string,
    headers: Headers,
  ): Promise<void> {
    try {
      await this.publishConfirmed(exchange, routingKey, message.content, copyProperties(message, headers));
    } catch (error) {
      this.log.error(
        { err: error, exchange, routingKey },
        "cannot move a failed event on; it will be redelivered",
      );
      this.safeNack(channel, message, true);
      return;
    }
    this.safeAck(channel, message);
  }

  // ---------------------------------------------------------------------------------------------- shared

  private context(
    properties: Message["properties"],
    bindings: Record<string, string>,
    attempt: number,
  ): MessageContext {
    const headers = properties.headers as Headers | undefined;
    const requestId = stringHeader(headers, Header.REQUEST_ID) ?? randomUUID();
    return {
      requestId,
      messageId: typeof properties.messageId === "string" ? properties.messageId : "",
      deadline: numberHeader(headers, Header.DEADLINE),
      traceparent: stringHeader(headers, Header.TRACEPARENT),
      attempt,
      log: this.log.child({ requestId, ...bindings }),
    };
  }

  private track(work: Promise<void>): void {
    const tracked = work.catch((error: unknown) =>
      this.log.error({ err: error }, "message handling crashed"),
    );
    this.inflight.add(tracked);
    void tracked.finally(() => this.inflight.delete(tracked));
  }

  private safeAck(channel: Channel, message: Message): void {
    try {
      channel.ack(message);
    } catch (error) {
      // The channel died with the connection: the broker redelivers the message after the reconnect.
      this.log.debug({ err: error }, "ack not sent (channel closed)");
    }
  }

  private safeNack(channel: Channel, message: Message, requeue: boolean): void {
    try {
      channel.nack(message, false, requeue);
    } catch (error) {
      this.log.debug({ err: error }, "nack not sent (channel closed)");
    }
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.serialTail.then(work, work);
    this.serialTail = run.catch(() => undefined);
    return run;
  }

  private async setup(connection: ChannelModel, generation: number): Promise<void> {
    const declarations = await connection.createChannel();
    declarations.on("error", (error: Error) => this.log.error({ err: error }, "topology declaration failed"));
    await declareExchanges(declarations, this.journal);
    await declarations.close();
    await this.openPublisher(connection);
    await this.openRpcChannel(connection);
    const roles: Role[] = [...this.servers.values(), ...this.subscriptions.values()];
    for (const role of roles) {
      if ("handlers" in role && role.handlers.size === 0) continue;
      try {
        if ("handlers" in role) await this.setupServer(role, connection, generation);
        else await this.setupSubscription(role, connection, generation);
      } catch (error) {
        // The connection itself failing aborts the whole setup; one refused queue must not.
        if (!isChannelError(error)) throw error;
        this.log.error({ err: error, queue: role.queue }, "consumer set-up failed; retrying on its own");
        this.scheduleRecovery(role, 0);
      }
    }
  }

  private onConnectionLost(): void {
    this.publisher = undefined;
    this.rpcChannel = undefined;
    this.failPending("The connection to the message broker was lost.");
    for (const role of [...this.servers.values(), ...this.subscriptions.values()]) {
      role.channel = undefined;
      role.consumerTag = undefined;
    }
  }

  private onConsumerCancelled(role: Role, channel: Channel): void {
    // The broker cancelled the consumer (its queue was deleted): a fresh channel re-declares and re-consumes.
    this.log.warn({ queue: role.queue }, "consumer cancelled by the broker; recovering");
    channel.close().catch(() => undefined);
  }

  private onRoleChannelClosed(role: Role, channel: Channel): void {
    if (role.channel !== channel) return;
    role.channel = undefined;
    role.consumerTag = undefined;
    // A channel can fail alone (a refused declaration, a deleted queue) while the connection lives on.
    this.scheduleRecovery(role, 0);
  }

  private scheduleRecovery(role: Role, failures: number): void {
    if (this.closing) return;
    const wait = Math.min(30_000, ROLE_RECOVERY_DELAY_MS * 2 ** failures);
    setTimeout(() => {
      void this.serial(async () => {
        const connection = this.manager.connection;
        // Without a connection the reconnect sets every role up again; nothing to do here.
        if (this.closing || !connection || role.channel) return;
        if ("handlers" in role && role.handlers.size === 0) return;
        try {
          if ("handlers" in role) await this.setupServer(role, connection, this.manager.generation);
          else await this.setupSubscription(role, connection, this.manager.generation);
          this.log.info({ queue: role.queue }, "consumer recovered");
        } catch (error) {
          this.log.error({ err: error, queue: role.queue }, "consumer recovery failed; retrying");
          this.scheduleRecovery(role, failures + 1);
        }
      });
    }, wait).unref();
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const roles = [...this.servers.values(), ...this.subscriptions.values()];
    await Promise.all(
      roles.map(async (role) => {
        if (!role.channel || !role.consumerTag) return;
        try {
          await role.channel.cancel(role.consumerTag);
        } catch (error) {
          this.log.debug({ err: error, queue: role.queue }, "consumer already gone");
        }
      }),
    );
    if (this.inflight.size > 0) {
      const timer = delay(this.closeTimeoutMs);
      const settled = await Promise.race([
        Promise.allSettled([...this.inflight]).then(() => true),
        timer.then(() => false),
      ]);
      if (!settled) this.log.warn({ handlers: this.inflight.size }, "closing with handlers still running");
    }
    this.failPending("The message bus is closed.");
    // Channel by channel first: a connection.close can overtake messages just published on a channel
    // (a reply, a journal copy) and the broker drops them; a channel.close handshake flushes them.
    const channels: Channel[] = [];
    for (const role of roles) if (role.channel) channels.push(role.channel);
    if (this.rpcChannel) channels.push(this.rpcChannel);
    if (this.publisher) channels.push(this.publisher);
    await Promise.all(channels.map((channel) => channel.close().catch(() => undefined)));
    await this.manager.close();
    this.log.info("message bus closed");
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

function copyProperties(message: Message, headers: Headers): Options.Publish {
  const p = message.properties;
  const properties: Options.Publish = { persistent: true, headers: compactHeaders(headers) };
  if (p.messageId !== undefined) properties.messageId = p.messageId;
  if (p.timestamp !== undefined) properties.timestamp = p.timestamp;
  if (p.type !== undefined) properties.type = p.type;
  if (p.contentType !== undefined) properties.contentType = p.contentType;
  if (p.contentEncoding !== undefined) properties.contentEncoding = p.contentEncoding;
  if (p.correlationId !== undefined) properties.correlationId = p.correlationId;
  if (p.appId !== undefined) properties.appId = p.appId;
  return properties;
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

/** A channel-level refusal (AMQP 4xx on a channel, e.g. PRECONDITION_FAILED), as opposed to a lost connection. */
function isChannelError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "number" && code >= 400 && code < 500 && code !== 403;
}

/** A retried message comes back through the default exchange, keyed by queue: its first key is in a header. */
function originalRoutingKey(message: Message): string {
  return stringHeader(message.properties.headers, Header.ORIGINAL_ROUTING_KEY) ?? message.fields.routingKey;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
