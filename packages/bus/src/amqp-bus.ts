import {
  type EventDescriptor,
  isAppError,
  type PayloadOf,
  type RequestOf,
  type ResponseOf,
  type RpcDescriptor,
} from "@fundraise/protocol";
import type { Channel, ChannelModel } from "amqplib";
import pino, { type Logger } from "pino";
import type {
  Answer,
  Bus,
  CallOptions,
  EventHandler,
  PublishOptions,
  RpcHandler,
  SubscribeOptions,
} from "./bus.ts";
import { ConnectionManager } from "./connection.ts";
import { type ConsumerRole, Consumers } from "./consumers.ts";
import { EventPublisher } from "./event-publisher.ts";
import { EventSubscriber } from "./event-subscriber.ts";
import type { BusJournal, JournalFactory, JournalNote } from "./journal-hook.ts";
import { type BusMetrics, inspectQueues, type QueueStat, timed } from "./metrics.ts";
import type { RpcAnswers } from "./rpc-answers.ts";
import { RpcClient } from "./rpc-client.ts";
import { RpcServer } from "./rpc-server.ts";
import { deadLetterQueueOf, declareExchanges } from "./topology.ts";

// Exported from here since before the split: index.ts and the tests import it from this module.
export { failureHeaders, persistentCopyOf } from "./event-subscriber.ts";

export interface AmqpBusOptions {
  /** amqp://user:pass@host:port/vhost; a `heartbeat` query parameter is added when absent. */
  url: string;
  /** This process's service name: in logs, the broker's connection name and the `x-published-by` header. */
  service: string;
  logger?: Logger;
  /** Unacknowledged messages per consumer, i.e. handler concurrency per queue (default 10). */
  prefetch?: number;
  /**
   * The journal the bus declares on every (re)connect and copies its RPC requests and replies to:
   * `journalWriter()` from @fundraise/journal. None by default.
   */
  journal?: JournalFactory;
  /** Timeout of a call whose descriptor and options name none (default 5000). */
  defaultTimeoutMs?: number;
  /** How long publish() and serve()/subscribe() wait for a lost broker to come back (default 10 s). */
  publishTimeoutMs?: number;
  /**
   * How long createAmqpBus waits for the first connection (default 30 s; `Infinity`: as long as it takes,
   * what a service does). Meanwhile one line per burst of attempts says what it waits for.
   */
  connectTimeoutMs?: number;
  /** How long close() waits for running handlers (default 10 s). */
  closeTimeoutMs?: number;
  /** Cap of the reconnect backoff (default 5 s). */
  maxReconnectDelayMs?: number;
  /**
   * Turns a handler's failure that is not an AppError into one before it is answered (service-kit passes
   * its database translation: a lost or exhausted database is 503, not 500). Identity by default.
   */
  translateError?: (error: unknown) => unknown;
  /** Where RPC timings go, client and server side (service-kit's metrics); none by default. */
  metrics?: BusMetrics;
}

/** The queues this process consumes, as the broker sees them now (metrics.ts `inspectQueues`). */
export interface QueueReport {
  /** RPC queues and event subscriptions: depth and consumers. */
  queues: QueueStat[];
  /** The dead-letter queue of each subscription: messages that wait for an operator. */
  deadLetters: QueueStat[];
}

export interface AmqpBus extends Bus {
  readonly service: string;
  /**
   * Stops taking messages (RPC requests and events) and waits for the running handlers, up to the close
   * timeout; calls and publishes still work. The first step of a shutdown (service-kit `runService`).
   */
  stopConsuming(): Promise<void>;
  /** Resolves once the broker connection is up; `unavailable` after `timeoutMs`. */
  waitForConnection(timeoutMs?: number): Promise<void>;
  /** Depth and consumers of this process's queues, within `timeoutMs` (unknown: null); for a scrape. */
  inspectQueues(timeoutMs: number): Promise<QueueReport>;
}

/**
 * Connects, declares the topology and returns the Bus. Rejects with `unavailable` BROKER_UNAVAILABLE when
 * the broker cannot be reached within `connectTimeoutMs`.
 */
export async function createAmqpBus(options: AmqpBusOptions): Promise<AmqpBus> {
  const bus = new AmqpBusImpl(options);
  await bus.start();
  return bus;
}

/** One connection shared by the four roles; it sets them up on every (re)connect and tears them down at close. */
class AmqpBusImpl implements AmqpBus {
  readonly service: string;
  private readonly log: Logger;
  private readonly manager: ConnectionManager;
  private readonly journal: BusJournal | undefined;
  private readonly publishTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private readonly closeTimeoutMs: number;
  private readonly consumers: Consumers;
  private readonly client: RpcClient;
  private readonly server: RpcServer;
  private readonly publisher: EventPublisher;
  private readonly subscriber: EventSubscriber;
  private readonly metrics: BusMetrics;
  private readonly translateError: (error: unknown) => unknown;
  private closing: Promise<void> | undefined;
  private consumingStopped: Promise<void> | undefined;

  constructor(options: AmqpBusOptions) {
    this.service = options.service;
    this.log = (options.logger ?? pino({ level: "silent" })).child({
      component: "bus",
      service: options.service,
    });
    this.publishTimeoutMs = options.publishTimeoutMs ?? 10_000;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 30_000;
    this.closeTimeoutMs = options.closeTimeoutMs ?? 10_000;
    this.metrics = options.metrics ?? {};
    this.translateError = options.translateError ?? ((error) => error);
    this.manager = new ConnectionManager({
      url: options.url,
      connectionName: `${options.service}:${process.pid}`,
      logger: this.log,
      maxBackoffMs: options.maxReconnectDelayMs ?? 5000,
      setup: (connection, generation) => this.setup(connection, generation),
      onLost: () => this.onConnectionLost(),
    });
    const shared = {
      log: this.log,
      service: this.service,
      manager: this.manager,
      isClosing: () => this.closing !== undefined,
    };
    const { publishTimeoutMs } = this;
    const prefetch = options.prefetch ?? 10;
    // Entries go out on the client's channel, open whenever the bus is connected.
    const journal = options.journal?.({
      log: this.log,
      service: this.service,
      channel: () => this.client.channel,
    });
    this.journal = journal;
    const consumers = new Consumers(shared);
    const publisher = new EventPublisher({ ...shared, journal, publishTimeoutMs });
    this.consumers = consumers;
    this.publisher = publisher;
    this.client = new RpcClient({
      ...shared,
      journal,
      defaultTimeoutMs: options.defaultTimeoutMs ?? 5000,
    });
    this.server = new RpcServer({
      ...shared,
      journal,
      prefetch,
      publishTimeoutMs,
      consumers,
      translateError: this.translateError,
    });
    this.subscriber = new EventSubscriber({
      ...shared,
      journal,
      prefetch,
      publishTimeoutMs,
      consumers,
      publisher,
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

  call<D extends RpcDescriptor>(
    descriptor: D,
    request: RequestOf<D>,
    options?: CallOptions,
  ): Promise<ResponseOf<D>> {
    return timed(this.metrics.rpcClient, descriptor.name, () =>
      this.client.call(descriptor, request, options),
    ).then((answer) => answer.data);
  }

  callWithMessage<D extends RpcDescriptor>(
    descriptor: D,
    request: RequestOf<D>,
    options?: CallOptions,
  ): Promise<Answer<ResponseOf<D>>> {
    return timed(this.metrics.rpcClient, descriptor.name, () =>
      this.client.call(descriptor, request, options),
    );
  }

  serve<D extends RpcDescriptor>(descriptor: D, handler: RpcHandler<D>): Promise<void> {
    const { rpcServer } = this.metrics;
    const observed: RpcHandler<D> = rpcServer
      ? (request, ctx) =>
          timed(
            rpcServer,
            descriptor.name,
            () => handler(request, ctx),
            // What the server would answer: an AppError as it is, anything else translated (once).
            (error) => (isAppError(error) ? error : this.translateError(error)),
          )
      : handler;
    return this.server.serve(descriptor, observed);
  }

  keepAnswers(answers: RpcAnswers): void {
    this.server.keepAnswers(answers);
  }

  async inspectQueues(timeoutMs: number): Promise<QueueReport> {
    const queues = this.roles().map((role) => role.queue);
    const deadLetters = this.subscriber.roles().map((role) => deadLetterQueueOf(role.queue));
    const stats = await inspectQueues(this.manager.connection, [...queues, ...deadLetters], timeoutMs);
    return { queues: stats.slice(0, queues.length), deadLetters: stats.slice(queues.length) };
  }

  publish<D extends EventDescriptor>(
    descriptor: D,
    payload: PayloadOf<D>,
    options?: PublishOptions,
  ): Promise<void> {
    return this.publisher.publish(descriptor, payload, options);
  }

  subscribe<D extends EventDescriptor>(
    consumer: string,
    descriptor: D,
    handler: EventHandler<D>,
    options?: SubscribeOptions,
  ): Promise<void> {
    return this.subscriber.subscribe(consumer, descriptor, handler, options);
  }

  note(note: JournalNote): void {
    this.journal?.record(note);
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  /** Servers before subscriptions: the order a new connection sets them up in. */
  private roles(): ConsumerRole[] {
    return [...this.server.roles(), ...this.subscriber.roles()];
  }

  private async setup(connection: ChannelModel, generation: number): Promise<void> {
    const declarations = await connection.createChannel();
    declarations.on("error", (error: Error) => this.log.error({ err: error }, "topology declaration failed"));
    await declareExchanges(declarations);
    await declarations.close();
    await this.journal?.declare(connection);
    await this.publisher.open(connection);
    await this.client.open(connection);
    // A reconnection during a shutdown must not start consuming again.
    if (!this.consumingStopped) await this.consumers.setUpAll(this.roles(), connection, generation);
  }

  private onConnectionLost(): void {
    this.publisher.detach();
    this.client.detach();
    this.consumers.detach(this.roles());
  }

  stopConsuming(): Promise<void> {
    this.consumingStopped ??= this.consumers.stop(this.roles(), this.closeTimeoutMs);
    return this.consumingStopped;
  }

  private async shutdown(): Promise<void> {
    const roles = this.roles();
    await this.stopConsuming();
    // What the last handlers answered is still waiting for the end of the turn.
    this.server.flush();
    this.client.failPending("The message bus is closed.");
    this.journal?.flush();
    // Channel by channel first: a connection.close can overtake messages just published on a channel
    // (a reply, a journal copy) and the broker drops them; a channel.close handshake flushes them.
    const channels: Channel[] = [];
    for (const role of roles) if (role.channel) channels.push(role.channel);
    if (this.client.channel) channels.push(this.client.channel);
    if (this.publisher.channel) channels.push(this.publisher.channel);
    await Promise.all(channels.map((channel) => channel.close().catch(() => undefined)));
    await this.manager.close();
    this.log.info("message bus closed");
  }
}
