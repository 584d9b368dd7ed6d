import { randomUUID } from "node:crypto";
import {
  type AppError,
  ErrorCode,
  errors,
  type RpcDescriptor,
  ServiceResponse,
  validatorOf,
} from "@fundraise/protocol";
import type { Channel, ChannelModel, ConsumeMessage, Options } from "amqplib";
import type { Logger } from "pino";
import type { TSchema } from "typebox";
import { BatchedAcks } from "./acks.ts";
import type { MessageContext, RpcHandler } from "./bus.ts";
import { decodeBody, encodeBody } from "./codec.ts";
import { brokerUnavailable, type ConnectionManager } from "./connection.ts";
import { type ConsumerRole, type Consumers, messageContext } from "./consumers.ts";
import {
  amqpTimestamp,
  compactHeaders,
  errorReply,
  Header,
  type MessageKind,
  type ReplyParts,
} from "./headers.ts";
import type { BusJournal } from "./journal-hook.ts";
import { answerOnce, type RpcAnswers, requestKeyOf } from "./rpc-answers.ts";
import { type BatchEntry, Coalescer, messagesOf, type Received, RpcBatch, unbatch } from "./rpc-batch.ts";
import { failureOf, successOf } from "./rpc-outcome.ts";
import { declareRpcQueue, Exchanges, rpcQueueOf } from "./topology.ts";
import { rpcServerSpan } from "./trace-context.ts";

export interface RpcServerOptions {
  log: Logger;
  service: string;
  /** Where copies of replies go; undefined with the journal off. */
  journal: BusJournal | undefined;
  prefetch: number;
  publishTimeoutMs: number;
  manager: ConnectionManager;
  consumers: Consumers;
  isClosing: () => boolean;
  /** A handler's failure as it is answered (AmqpBusOptions.translateError). */
  translateError: (error: unknown) => unknown;
}

/** The consumer of one service's RPC queue, bound to every name this bus serves for the service. */
interface ServerRole extends ConsumerRole {
  service: string;
  handlers: Map<string, { descriptor: RpcDescriptor; handler: RpcHandler<RpcDescriptor> }>;
}

/** A consumer channel requests come in on: its acknowledgements (acks.ts), and an id for its replies. */
interface ConsumerChannel {
  channel: Channel;
  acks: BatchedAcks;
  id: number;
}

/** A reply waiting for the end of the turn; `sent` acknowledges its request. */
interface Reply extends BatchEntry {
  channel: Channel;
  replyTo: string;
  sent: () => void;
}

/** Serves RPCs: runs the handler of each request still worth answering and replies to its caller. */
export class RpcServer {
  private readonly servers = new Map<string, ServerRole>();
  private readonly channels = new Map<Channel, ConsumerChannel>();
  private channelsSeen = 0;
  /**
   * Replies wait per caller and per channel they came in on: a reply goes out on its request's channel
   * (the one its acknowledgement belongs to), so a channel that closed loses only its own replies.
   */
  private readonly replies = new Coalescer<Reply>((_, replies) => this.sendReplies(replies));

  /** Where answers to keyed requests are kept (rpc-answers.ts); none until the service gives it. */
  private answers: RpcAnswers | undefined;

  constructor(private readonly bus: RpcServerOptions) {}

  keepAnswers(answers: RpcAnswers): void {
    this.answers = answers;
  }

  /** Sends the replies and acknowledgements waiting for the end of the turn; the bus does so at close. */
  flush(): void {
    this.replies.flush();
    for (const { acks } of this.channels.values()) acks.flush();
  }

  roles(): ServerRole[] {
    return [...this.servers.values()];
  }

  async serve<D extends RpcDescriptor>(descriptor: D, handler: RpcHandler<D>): Promise<void> {
    if (this.bus.isClosing()) throw brokerUnavailable("The message bus is closed.");
    let role = this.servers.get(descriptor.service);
    if (!role) {
      role = this.newRole(descriptor.service);
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
      await this.bus.consumers.serial(async () => {
        const connection = await this.bus.manager.waitConnected(this.bus.publishTimeoutMs);
        if (served.channel && served.generation === this.bus.manager.generation) {
          await served.channel.bindQueue(served.queue, Exchanges.RPC, descriptor.name);
        } else {
          await served.setUp(connection, this.bus.manager.generation);
        }
      });
    } catch (error) {
      served.handlers.delete(descriptor.name);
      throw error;
    }
    this.bus.log.info({ rpc: descriptor.name, queue: served.queue }, "serving RPC");
  }

  private newRole(service: string): ServerRole {
    const role: ServerRole = {
      service,
      queue: rpcQueueOf(service),
      handlers: new Map(),
      channel: undefined,
      consumerTag: undefined,
      generation: 0,
      // Every serve() for the service failed: there is no name to bind.
      idle: () => role.handlers.size === 0,
      setUp: (connection, generation) => this.setUp(role, connection, generation),
    };
    return role;
  }

  private setUp(role: ServerRole, connection: ChannelModel, generation: number): Promise<void> {
    return this.bus.consumers.consume(role, connection, generation, {
      prefetch: this.bus.prefetch,
      channelErrorMessage: "RPC server channel error",
      declare: (channel) => declareRpcQueue(channel, role.service, role.handlers.keys()),
      handle: (channel, message) => this.handleRequest(role, channel, message),
    });
  }

  private async handleRequest(role: ServerRole, channel: Channel, message: ConsumeMessage): Promise<void> {
    let from = this.channels.get(channel);
    if (!from) {
      from = { channel, acks: new BatchedAcks(channel, this.bus.log), id: this.channelsSeen++ };
      this.channels.set(channel, from);
      channel.once("close", () => this.channels.delete(channel));
    }
    const { acks } = from;
    acks.delivered(message);
    const replyTo = message.properties.replyTo;
    let requests: Received[];
    try {
      requests = unbatch(message, RpcBatch.REQUESTS);
    } catch (error) {
      // Nothing in it can be answered; its callers end at their deadlines.
      this.bus.log.error({ err: error }, "undecodable RPC batch dropped");
      requests = [];
    }
    // The message is acknowledged once every request in it is answered (or dropped).
    let unanswered = requests.length;
    const answered = () => {
      unanswered -= 1;
      if (unanswered === 0) acks.ack(message);
    };
    if (unanswered === 0) acks.ack(message);
    await Promise.all(
      requests.map((request) =>
        this.handleOne(role, from, message.fields.routingKey, request, replyTo, answered),
      ),
    );
  }

  private async handleOne(
    role: ServerRole,
    from: ConsumerChannel,
    routingKey: string,
    message: Received,
    replyTo: unknown,
    answered: () => void,
  ): Promise<void> {
    const { properties } = message;
    const name = typeof properties.type === "string" ? properties.type : routingKey;
    const ctx = messageContext(this.bus.log, properties, { rpc: name }, 1);
    if (ctx.deadline !== undefined && ctx.deadline <= Date.now()) {
      ctx.log.warn({ deadline: ctx.deadline }, "dropped an RPC request past its deadline");
      answered();
      return;
    }
    const span = rpcServerSpan(name, role.service, ctx.traceparent);
    ctx.traceparent = span.traceparent;
    let reply: ReplyParts;
    let descriptor: RpcDescriptor | undefined;
    let failure: AppError | undefined;
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
      descriptor = entry.descriptor;
      const request = validatorOf(entry.descriptor.request).assert(
        decodeBody(message.content, properties.contentType),
        `${name} request`,
      );
      reply = await answerOnce(
        entry.descriptor.answerKept ? this.answers : undefined,
        requestKeyOf(properties.headers),
        ctx.log,
        async () => successOf(entry.descriptor, await span.run(() => entry.handler(request, ctx)), ctx.log),
      );
    } catch (thrown) {
      failure = failureOf(thrown, this.bus.translateError, ctx.log);
      reply = errorReply(failure);
    }
    span.end(failure);
    const to = { from, replyTo, correlationId: properties.correlationId };
    this.sendReply(to, { name, descriptor, ctx }, reply, answered);
  }

  private sendReply(
    to: { from: ConsumerChannel; replyTo: unknown; correlationId: unknown },
    of: { name: string; descriptor: RpcDescriptor | undefined; ctx: MessageContext },
    reply: ReplyParts,
    sent: () => void,
  ): void {
    const { from, replyTo, correlationId } = to;
    const { name, descriptor, ctx } = of;
    const { requestId } = ctx;
    let encoded: ReturnType<typeof encodeBody>;
    try {
      encoded = encodeBody(reply.envelope);
    } catch (error) {
      this.bus.log.error({ err: error, rpc: name, requestId }, "cannot encode the RPC reply");
      encoded = encodeBody(
        errorReply(errors.internal(ErrorCode.INTERNAL, "An unexpected error occurred.")).envelope,
      );
    }
    const properties: Options.Publish = {
      correlationId: typeof correlationId === "string" ? correlationId : undefined,
      messageId: randomUUID(),
      timestamp: amqpTimestamp(),
      type: name,
      contentType: encoded.contentType,
      headers: compactHeaders({
        ...reply.headers,
        [Header.REQUEST_ID]: requestId,
        [Header.KIND]: "rpc-reply" satisfies MessageKind,
        [Header.PUBLISHED_BY]: this.bus.service,
      }),
    };
    // A call that carries secrets is not journaled, its reply neither (an unknown name: nothing to hide).
    if (this.bus.journal && descriptor?.journal !== false) {
      this.bus.journal.record({
        kind: "rpc-reply",
        id: properties.messageId as string,
        name,
        at: Date.now(),
        requestId,
        traceparent: ctx.traceparent,
        causedBy: ctx.causedBy,
        correlationId: properties.correlationId,
        message: { properties, body: encoded.body },
        ...(descriptor && reply.envelope.success
          ? { schema: envelopeSchemaOf(descriptor), value: reply.envelope }
          : {}),
      });
    }
    // No replyTo: a replayed request, executed for its effect; nobody waits for the answer.
    if (typeof replyTo !== "string" || replyTo === "") {
      sent();
      return;
    }
    this.replies.add(`${from.id} ${replyTo}`, {
      channel: from.channel,
      replyTo,
      body: encoded.body,
      properties,
      sent,
    });
  }

  /** Sends the replies for one caller finished in one turn on one channel: alone, or in batches. */
  private sendReplies(replies: Reply[]): void {
    for (const message of messagesOf(RpcBatch.REPLIES, this.bus.service, replies)) {
      const { channel, replyTo } = message.entries[0] as Reply;
      try {
        channel.sendToQueue(replyTo, message.body, message.properties);
      } catch (error) {
        this.bus.log.warn({ err: error, replies: message.entries.length }, "cannot send RPC replies");
      }
      // Acknowledged after the reply is written: a crash between the two redelivers the request.
      for (const reply of message.entries) reply.sent();
    }
  }
}

const envelopes = new WeakMap<RpcDescriptor, TSchema>();

/** A success reply's schema, made once per RPC: the journal finds the personal fields of its data by it. */
function envelopeSchemaOf(descriptor: RpcDescriptor): TSchema {
  let schema = envelopes.get(descriptor);
  if (!schema) {
    schema = ServiceResponse(descriptor.response);
    envelopes.set(descriptor, schema);
  }
  return schema;
}
