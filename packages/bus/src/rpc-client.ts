import { randomUUID } from "node:crypto";
import {
  type AppError,
  ErrorCode,
  errors,
  type RequestOf,
  type ResponseOf,
  type RpcDescriptor,
  validatorOf,
} from "@fundraise/protocol";
import type { Channel, ChannelModel, ConsumeMessage, Message, Options } from "amqplib";
import type { Logger } from "pino";
import type { Answer, CallOptions } from "./bus.ts";
import { ChannelHolder } from "./channel-holder.ts";
import { decodeBody, encodeBody } from "./codec.ts";
import { brokerUnavailable, type ConnectionManager } from "./connection.ts";
import { amqpTimestamp, compactHeaders, Header, type MessageKind, readReply } from "./headers.ts";
import { uuidv7 } from "./ids.ts";
import type { BusJournal } from "./journal-hook.ts";
import { requestKeyHeaders } from "./rpc-answers.ts";
import {
  type BatchEntry,
  type BatchKind,
  Coalescer,
  messagesOf,
  type Received,
  RpcBatch,
  unbatch,
} from "./rpc-batch.ts";
import { Exchanges, REPLY_TO } from "./topology.ts";
import { rpcClientSpan } from "./trace-context.ts";

const CONNECTION_LOST = "The connection to the message broker was lost.";

export interface RpcClientOptions {
  log: Logger;
  service: string;
  /** Where copies of requests go; undefined with the journal off. */
  journal: BusJournal | undefined;
  defaultTimeoutMs: number;
  manager: ConnectionManager;
  isClosing: () => boolean;
}

interface PendingCall {
  service: string;
  name: string;
  resolve: (value: unknown) => void;
  reject: (error: AppError) => void;
  timer: NodeJS.Timeout;
}

/** A request waiting for the end of the turn to be published, alone or in a batch (rpc-batch.ts). */
interface Outgoing extends BatchEntry {
  correlationId: string;
  deadline: number;
  /** Keeps the journal's copy of the request once it is published. */
  journal: (() => void) | undefined;
}

/**
 * Calls: publishes requests to `rpc` (mandatory, so an unroutable one comes back at once) and correlates the
 * replies that come back through direct reply-to on the same channel. Calls of one RPC made in the same
 * turn of the event loop go out as one message (rpc-batch.ts).
 */
export class RpcClient extends ChannelHolder<Channel> {
  private readonly pending = new Map<string, PendingCall>();
  private readonly outgoing = new Coalescer<Outgoing>((name, calls) => this.publish(name, calls));

  constructor(private readonly bus: RpcClientOptions) {
    super();
  }

  async call<D extends RpcDescriptor>(
    descriptor: D,
    request: RequestOf<D>,
    options: CallOptions = {},
  ): Promise<Answer<ResponseOf<D>>> {
    validatorOf(descriptor.request).assert(request, `${descriptor.name} request`);
    if (this.bus.isClosing()) throw brokerUnavailable("The message bus is closed.");
    const now = Date.now();
    let deadline = now + (options.timeoutMs ?? descriptor.timeoutMs ?? this.bus.defaultTimeoutMs);
    if (options.deadline !== undefined) deadline = Math.min(deadline, options.deadline);
    if (deadline <= now) throw rpcTimeout(descriptor.service);
    // Fails fast while disconnected: waiting would only eat the caller's deadline.
    await this.getChannel();
    const correlationId = randomUUID();
    const requestId = options.requestId ?? uuidv7(now);
    const { body, contentType } = encodeBody(request);
    const span = rpcClientSpan(descriptor.name, descriptor.service, options.traceparent);
    const headers = compactHeaders({
      [Header.REQUEST_ID]: requestId,
      [Header.DEADLINE]: deadline,
      [Header.TRACEPARENT]: span.traceparent,
      [Header.KIND]: "rpc-request" satisfies MessageKind,
      [Header.PUBLISHED_BY]: this.bus.service,
      ...requestKeyHeaders(options.idempotency),
    });
    // What the request would be alone; the reply address and expiry are set when it is published.
    const properties: Options.Publish = {
      correlationId,
      messageId: randomUUID(),
      timestamp: amqpTimestamp(now),
      type: descriptor.name,
      contentType,
      headers,
    };
    return new Promise<Answer<ResponseOf<D>>>((resolveCall, rejectCall) => {
      const resolve = (answer: unknown) => {
        span.end();
        resolveCall(answer as Answer<ResponseOf<D>>);
      };
      const reject = (error: AppError) => {
        span.end(error);
        rejectCall(error);
      };
      const timer = setTimeout(() => {
        this.pending.delete(correlationId);
        reject(rpcTimeout(descriptor.service));
      }, deadline - now);
      this.pending.set(correlationId, {
        service: descriptor.service,
        name: descriptor.name,
        resolve,
        reject,
        timer,
      });
      const { journal } = this.bus;
      const outgoing: Outgoing = {
        correlationId,
        deadline,
        body,
        properties,
        // The copy has no expiry and no reply address: a stream keeps it for days, and a replay waits for no answer.
        journal:
          journal && descriptor.journal
            ? () =>
                journal.record({
                  kind: "rpc-request",
                  id: properties.messageId as string,
                  name: descriptor.name,
                  at: Date.now(),
                  requestId,
                  traceparent: span.traceparent,
                  causedBy: options.causedBy,
                  correlationId,
                  message: { properties, body },
                  schema: descriptor.request,
                  value: request,
                })
            : undefined,
      };
      if (descriptor.batched) this.outgoing.add(descriptor.name, outgoing);
      else this.publish(descriptor.name, [outgoing]);
    });
  }

  /** The channel calls go out and replies come back on. */
  protected async create(connection: ChannelModel): Promise<Channel> {
    const channel = await connection.createChannel();
    channel.on("error", (error: Error) => this.bus.log.warn({ err: error }, "RPC client channel error"));
    channel.on("return", (message: Message) => this.onReturn(message));
    // Direct reply-to: no reply queue to declare or clean up; the consumer must exist before the first call.
    await channel.consume(REPLY_TO, (message) => this.onReply(message), { noAck: true });
    return channel;
  }

  /** Replies come back on this channel only: whatever was in flight will never be answered. */
  protected override closed(): void {
    this.failPending(CONNECTION_LOST);
  }

  /** The connection is gone, and with it the channel every pending reply would have come back on. */
  override detach(): void {
    super.detach();
    this.failPending(CONNECTION_LOST);
  }

  failPending(message: string): void {
    const calls = [...this.pending.values()];
    this.pending.clear();
    for (const call of calls) {
      clearTimeout(call.timer);
      call.reject(errors.unavailable(ErrorCode.BROKER_UNAVAILABLE, message));
    }
    if (calls.length > 0)
      this.bus.log.warn({ calls: calls.length, reason: message }, "failed in-flight calls");
  }

  private async getChannel(): Promise<Channel> {
    if (this.channel) return this.channel;
    const connection = this.bus.manager.connection;
    if (!connection) throw brokerUnavailable();
    try {
      return await this.openOnce(connection);
    } catch (error) {
      throw errors.unavailable(ErrorCode.BROKER_UNAVAILABLE, "The message broker is not reachable.", {
        cause: error,
      });
    }
  }

  /** Publishes the calls of `name` made in one turn: alone, or in batches of several. */
  private publish(name: string, calls: Outgoing[]): void {
    // A call may have ended while it waited (its deadline, a lost connection): it is not sent.
    const live = calls.filter((call) => this.pending.has(call.correlationId));
    for (const message of messagesOf(RpcBatch.REQUESTS, this.bus.service, live)) {
      try {
        const channel = this.channel;
        if (!channel) throw new Error("no channel to the broker");
        const latest = Math.max(...message.entries.map((call) => call.deadline));
        channel.publish(Exchanges.RPC, name, message.body, {
          ...message.properties,
          type: name,
          replyTo: REPLY_TO,
          // The broker drops a message once no call in it is waited for; a server drops each request
          // of a batch past its own deadline.
          expiration: String(Math.max(1, latest - Date.now())),
          mandatory: true,
        });
        for (const call of message.entries) call.journal?.();
      } catch (error) {
        for (const call of message.entries) {
          this.settle(call.correlationId)?.reject(
            errors.unavailable(ErrorCode.BROKER_UNAVAILABLE, "The message broker is not reachable.", {
              cause: error,
            }),
          );
        }
      }
    }
  }

  private onReturn(message: Message): void {
    if (message.fields.exchange !== Exchanges.RPC) return;
    for (const request of this.unbatch(message, RpcBatch.REQUESTS)) {
      this.onReturnOf(request.properties.correlationId);
    }
  }

  private onReturnOf(correlationId: unknown): void {
    const call = this.settle(correlationId);
    if (!call) return;
    this.bus.log.debug({ rpc: call.name }, "RPC request unroutable: no instance serves it");
    call.reject(
      errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, `The ${call.service} service is not available.`),
    );
  }

  private onReply(message: ConsumeMessage | null): void {
    if (!message) return;
    for (const reply of this.unbatch(message, RpcBatch.REPLIES)) this.onReplyOf(reply);
  }

  private unbatch(message: Received, kind: BatchKind): Received[] {
    try {
      return unbatch(message, kind);
    } catch (error) {
      // Its calls end at their deadlines.
      this.bus.log.error({ err: error }, "undecodable RPC batch");
      return [];
    }
  }

  private onReplyOf(message: Received): void {
    const call = this.settle(message.properties.correlationId);
    if (!call) {
      this.bus.log.debug({ rpc: message.properties.type }, "late RPC reply ignored (the caller gave up)");
      return;
    }
    let outcome: ReturnType<typeof readReply>;
    try {
      outcome = readReply(
        decodeBody(message.content, message.properties.contentType),
        message.properties.headers,
      );
    } catch (error) {
      this.bus.log.error({ err: error, rpc: call.name }, "undecodable RPC reply");
      call.reject(errors.internal(ErrorCode.INTERNAL, "An unexpected error occurred.", { cause: error }));
      return;
    }
    if ("error" in outcome) call.reject(outcome.error);
    else call.resolve(outcome);
  }

  private settle(correlationId: unknown): PendingCall | undefined {
    if (typeof correlationId !== "string") return undefined;
    const call = this.pending.get(correlationId);
    if (!call) return undefined;
    this.pending.delete(correlationId);
    clearTimeout(call.timer);
    return call;
  }
}

function rpcTimeout(service: string): AppError {
  return errors.timeout(ErrorCode.RPC_TIMEOUT, `The ${service} service did not answer in time.`);
}
