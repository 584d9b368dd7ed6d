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
import { decodeBody, encodeBody } from "./codec.ts";
import { brokerUnavailable, type ConnectionManager } from "./connection.ts";
import { amqpTimestamp, compactHeaders, Header, type MessageKind, readReply } from "./headers.ts";
import type { JournalWriter } from "./journal.ts";
import { Exchanges, REPLY_TO } from "./topology.ts";

export interface RpcClientOptions {
  log: Logger;
  service: string;
  /** Where copies of requests go; undefined with the journal off. */
  journal: JournalWriter | undefined;
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

/**
 * Calls: publishes requests to `rpc` (mandatory, so an unroutable one comes back at once) and correlates the
 * replies that come back through direct reply-to on the same channel.
 */
export class RpcClient {
  private rpcChannel: Channel | undefined;
  private rpcOpening: Promise<Channel> | undefined;
  private readonly pending = new Map<string, PendingCall>();

  constructor(private readonly bus: RpcClientOptions) {}

  get channel(): Channel | undefined {
    return this.rpcChannel;
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
    const channel = await this.getChannel();
    const correlationId = randomUUID();
    const requestId = options.requestId ?? randomUUID();
    const { body, contentType } = encodeBody(request);
    const headers = compactHeaders({
      [Header.REQUEST_ID]: requestId,
      [Header.DEADLINE]: deadline,
      [Header.TRACEPARENT]: options.traceparent,
      [Header.KIND]: "rpc-request" satisfies MessageKind,
      [Header.PUBLISHED_BY]: this.bus.service,
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
    return new Promise<Answer<ResponseOf<D>>>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(correlationId);
        reject(rpcTimeout(descriptor.service));
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
      if (this.bus.journal && descriptor.journal) {
        // A stream keeps what it is given: no expiry, and no reply address that would be dead on replay.
        const { replyTo: _replyTo, expiration: _expiration, ...copy } = properties;
        this.bus.journal.copyAs(descriptor.journal, descriptor.name, body, request, copy);
      }
    });
  }

  /** Opens the channel calls go out and replies come back on; the bus does so on every new connection. */
  async open(connection: ChannelModel): Promise<Channel> {
    const channel = await connection.createChannel();
    channel.on("error", (error: Error) => this.bus.log.warn({ err: error }, "RPC client channel error"));
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

  /** The connection is gone, and with it the channel every pending reply would have come back on. */
  detach(): void {
    this.rpcChannel = undefined;
    this.failPending("The connection to the message broker was lost.");
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
    if (this.rpcChannel) return this.rpcChannel;
    const connection = this.bus.manager.connection;
    if (!connection) throw brokerUnavailable();
    this.rpcOpening ??= this.open(connection).finally(() => {
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

  private onReturn(message: Message): void {
    if (message.fields.exchange !== Exchanges.RPC) return;
    const call = this.settle(message.properties.correlationId);
    if (!call) return;
    this.bus.log.debug({ rpc: call.name }, "RPC request unroutable: no instance serves it");
    call.reject(
      errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, `The ${call.service} service is not available.`),
    );
  }

  private onReply(message: ConsumeMessage | null): void {
    if (!message) return;
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
