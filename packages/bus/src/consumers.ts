import { setTimeout as delay } from "node:timers/promises";
import type { Channel, ChannelModel, ConsumeMessage, Message } from "amqplib";
import type { Logger } from "pino";
import type { MessageContext } from "./bus.ts";
import type { ConnectionManager } from "./connection.ts";
import { Header, type Headers, numberHeader, stringHeader } from "./headers.ts";
import { uuidv7 } from "./ids.ts";

/** A queue this process consumes (a service's RPC queue, an event subscription) and the channel on it now. */
export interface ConsumerRole {
  readonly queue: string;
  channel: Channel | undefined;
  consumerTag: string | undefined;
  generation: number;
  /** True while there is nothing to consume: such a role is not set up. */
  idle(): boolean;
  /** Opens a channel on the connection, declares the queue and consumes it (through `Consumers.consume`). */
  setUp(connection: ChannelModel, generation: number): Promise<void>;
}

/** How a role consumes: what `Consumers.consume` needs beyond the role itself. */
export interface Consumption {
  prefetch: number;
  /** The log message of an error on the role's channel. */
  channelErrorMessage: string;
  declare(channel: Channel): Promise<unknown>;
  handle(channel: Channel, message: ConsumeMessage): Promise<void>;
}

export interface ConsumersOptions {
  log: Logger;
  manager: ConnectionManager;
  isClosing: () => boolean;
}

const ROLE_RECOVERY_DELAY_MS = 1000;

/**
 * Keeps every consumer role consuming: sets roles up one at a time, recovers a role whose channel failed
 * alone, and tracks the handlers running so that close() can wait for them.
 */
export class Consumers {
  private readonly inflight = new Set<Promise<void>>();
  // Declarations and consumer set-ups run one at a time, so two serve() calls never open two consumers.
  private serialTail: Promise<unknown> = Promise.resolve();

  constructor(private readonly bus: ConsumersOptions) {}

  serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.serialTail.then(work, work);
    this.serialTail = run.catch(() => undefined);
    return run;
  }

  /** The common set-up of every role: the role holds the channel only once its consumer is in place. */
  async consume(
    role: ConsumerRole,
    connection: ChannelModel,
    generation: number,
    how: Consumption,
  ): Promise<void> {
    const channel = await connection.createChannel();
    channel.on("error", (error: Error) =>
      this.bus.log.warn({ err: error, queue: role.queue }, how.channelErrorMessage),
    );
    channel.on("close", () => this.onChannelClosed(role, channel));
    let consumerTag: string;
    try {
      await channel.prefetch(how.prefetch);
      await how.declare(channel);
      ({ consumerTag } = await channel.consume(
        role.queue,
        (message) => {
          if (!message) this.onConsumerCancelled(role, channel);
          else this.track(how.handle(channel, message));
        },
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

  /** Sets the roles up on a new connection. */
  async setUpAll(roles: ConsumerRole[], connection: ChannelModel, generation: number): Promise<void> {
    for (const role of roles) {
      if (role.idle()) continue;
      try {
        await role.setUp(connection, generation);
      } catch (error) {
        // The connection itself failing aborts the whole setup; one refused queue must not.
        if (!isChannelError(error)) throw error;
        this.bus.log.error({ err: error, queue: role.queue }, "consumer set-up failed; retrying on its own");
        this.scheduleRecovery(role, 0);
      }
    }
  }

  /** Forgets the roles' channels, which died with the connection. */
  detach(roles: ConsumerRole[]): void {
    for (const role of roles) {
      role.channel = undefined;
      role.consumerTag = undefined;
    }
  }

  /** Cancels the roles' consumers, then waits up to `timeoutMs` for the handlers still running. */
  async stop(roles: ConsumerRole[], timeoutMs: number): Promise<void> {
    await Promise.all(
      roles.map(async (role) => {
        if (!role.channel || !role.consumerTag) return;
        try {
          await role.channel.cancel(role.consumerTag);
        } catch (error) {
          this.bus.log.debug({ err: error, queue: role.queue }, "consumer already gone");
        }
      }),
    );
    if (this.inflight.size > 0) {
      // An abortable timer: when the handlers finish first it must not hold the process open.
      const cancel = new AbortController();
      const timer = delay(timeoutMs, false, { signal: cancel.signal }).catch(() => false);
      const settled = await Promise.race([Promise.allSettled([...this.inflight]).then(() => true), timer]);
      cancel.abort();
      if (!settled)
        this.bus.log.warn({ handlers: this.inflight.size }, "closing with handlers still running");
    }
  }

  private track(work: Promise<void>): void {
    const tracked = work.catch((error: unknown) =>
      this.bus.log.error({ err: error }, "message handling crashed"),
    );
    this.inflight.add(tracked);
    void tracked.finally(() => this.inflight.delete(tracked));
  }

  private onConsumerCancelled(role: ConsumerRole, channel: Channel): void {
    // The broker cancelled the consumer (its queue was deleted): a fresh channel re-declares and re-consumes.
    this.bus.log.warn({ queue: role.queue }, "consumer cancelled by the broker; recovering");
    channel.close().catch(() => undefined);
  }

  private onChannelClosed(role: ConsumerRole, channel: Channel): void {
    if (role.channel !== channel) return;
    role.channel = undefined;
    role.consumerTag = undefined;
    // A channel can fail alone (a refused declaration, a deleted queue) while the connection lives on.
    this.scheduleRecovery(role, 0);
  }

  private scheduleRecovery(role: ConsumerRole, failures: number): void {
    if (this.bus.isClosing()) return;
    const wait = Math.min(30_000, ROLE_RECOVERY_DELAY_MS * 2 ** failures);
    setTimeout(() => {
      void this.serial(async () => {
        const connection = this.bus.manager.connection;
        // Without a connection the reconnect sets every role up again; nothing to do here.
        if (this.bus.isClosing() || !connection || role.channel) return;
        if (role.idle()) return;
        try {
          await role.setUp(connection, this.bus.manager.generation);
          this.bus.log.info({ queue: role.queue }, "consumer recovered");
        } catch (error) {
          this.bus.log.error({ err: error, queue: role.queue }, "consumer recovery failed; retrying");
          this.scheduleRecovery(role, failures + 1);
        }
      });
    }, wait).unref();
  }
}

/** What a handler learns about the message it handles; the log is `log`'s child with `bindings`. */
export function messageContext(
  log: Logger,
  properties: Message["properties"],
  bindings: Record<string, unknown>,
  attempt: number,
  /** This handling's journal id; an RPC request's is its messageId. */
  handling?: string,
): MessageContext {
  const headers = properties.headers as Headers | undefined;
  const requestId = stringHeader(headers, Header.REQUEST_ID) ?? uuidv7();
  const messageId = typeof properties.messageId === "string" ? properties.messageId : "";
  let child: Logger | undefined;
  return {
    requestId,
    messageId,
    deadline: numberHeader(headers, Header.DEADLINE),
    traceparent: stringHeader(headers, Header.TRACEPARENT),
    attempt,
    causedBy: handling ?? messageId,
    // Made when first used: a pino child costs about 2 µs (its bindings are serialized and redacted),
    // and most messages are handled without a log line.
    get log() {
      child ??= log.child({ requestId, ...bindings });
      return child;
    },
  };
}

export function safeAck(log: Logger, channel: Channel, message: Message): void {
  try {
    channel.ack(message);
  } catch (error) {
    // The channel died with the connection: the broker redelivers the message after the reconnect.
    log.debug({ err: error }, "ack not sent (channel closed)");
  }
}

export function safeNack(log: Logger, channel: Channel, message: Message, requeue: boolean): void {
  try {
    channel.nack(message, false, requeue);
  } catch (error) {
    log.debug({ err: error }, "nack not sent (channel closed)");
  }
}

/** A channel-level refusal (AMQP 4xx on a channel, e.g. PRECONDITION_FAILED), as opposed to a lost connection. */
function isChannelError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "number" && code >= 400 && code < 500 && code !== 403;
}
