import type { EventDescriptor, PayloadOf, RequestOf, ResponseOf, RpcDescriptor } from "@fundraise/protocol";
import type { Logger } from "pino";
import type { JournalNote } from "./journal-hook.ts";
import type { RequestKey, RpcAnswers } from "./rpc-answers.ts";

/**
 * What a message passes on to the calls and events it causes: its request id, its deadline and its trace.
 * One type, accepted by `call` (as its options) and by @fundraise/outbox (`enqueue`'s `context`): a handler
 * passes its `ctx` on and nothing is rebuilt.
 */
export interface TraceContext {
  /** Travels across every hop; the gateway sets it per HTTP request. */
  requestId?: string | undefined;
  /** Epoch ms after which nobody waits for the answer (RPC only): calls made meanwhile never wait longer. */
  deadline?: number | undefined;
  /** W3C trace context, carried in the `traceparent` header. */
  traceparent?: string | undefined;
  /**
   * The journal id of the handling that makes this call or publishes this event (a handler's `ctx` sets it
   * to its own): what draws a request's story as a tree (`replay --request`). Absent: the HTTP request.
   */
  causedBy?: string | undefined;
}

/** What a use case knows about the message that asked for it: its trace and a logger bound to it. */
export interface RequestContext extends TraceContext {
  requestId: string;
  /** A child logger with service, requestId and message name bound. */
  log: Logger;
  /**
   * Tells the bus that the handler found the event handled before and did nothing (service-kit's
   * `handleOnce`): the journal records the delivery as a duplicate, not as handled. Set for events only.
   */
  markDuplicate?: () => void;
}

/** What a handler knows about the message it handles. */
export interface MessageContext extends RequestContext {
  messageId: string;
  deadline: number | undefined;
  traceparent: string | undefined;
  /** Delivery attempt, 1 for the first (events only; RPC is always 1). */
  attempt: number;
  /** This handling's journal id, which the calls and events it makes name as their cause. */
  causedBy: string;
}

/** A call's options: the context of the message being handled (`ctx`), and optionally its own timeout. */
export interface CallOptions extends TraceContext {
  /** Overrides the descriptor's timeout; the call still never waits past `deadline`. */
  timeoutMs?: number | undefined;
  /**
   * The client's Idempotency-Key (the gateway's, on writes): a server given `keepAnswers` replies to it
   * once (rpc-answers.ts). Never in a handler's `ctx`, so the calls a handler makes do not carry it on.
   */
  idempotency?: RequestKey | undefined;
}

export interface PublishOptions {
  requestId?: string;
  /** The journal id of the handling that wrote the event (TraceContext.causedBy). */
  causedBy?: string;
  /** Stable id for idempotent consumers; a fresh UUID when absent. */
  messageId?: string;
  traceparent?: string;
}

export interface SubscribeOptions {
  /** Attempts before the message goes to the dead-letter queue (default 5). */
  maxAttempts?: number;
  /** First retry delay; doubles per attempt up to `maxRetryDelayMs` (defaults 1 s and 60 s). */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /** Queue type of the subscription and its dead-letter queue (default quorum: replicated, delivery-limited). */
  queueType?: "quorum" | "classic";
  /** Unacknowledged messages in flight for this subscription (default: the bus's prefetch). */
  prefetch?: number;
}

/**
 * A success answer that also carries a note for the caller: the envelope's `message` (e.g. "registered,
 * but the mail could not be sent"). Handlers return `withMessage(data, "...")` instead of the bare data.
 */
export class WithMessage<T> {
  constructor(
    readonly data: T,
    readonly message: string,
  ) {}
}

export const withMessage = <T>(data: T, message: string): WithMessage<T> => new WithMessage(data, message);

/** An answer as the caller receives it: the data and the envelope's message (null when none). */
export interface Answer<T> {
  data: T;
  message: string | null;
  /** Set when the service answered with the first answer it kept for the request's Idempotency-Key. */
  replayed?: true;
}

export type RpcHandler<D extends RpcDescriptor> = (
  request: RequestOf<D>,
  ctx: MessageContext,
) => Promise<ResponseOf<D> | WithMessage<ResponseOf<D>>>;

export type EventHandler<D extends EventDescriptor> = (
  payload: PayloadOf<D>,
  ctx: MessageContext,
) => Promise<void>;

/**
 * The platform's message bus. `call` throws an AppError (`unavailable` when no instance of the service
 * runs or the broker is down, `timeout` past the deadline, or the kind the handler threw).
 */
export interface Bus {
  call<D extends RpcDescriptor>(
    descriptor: D,
    request: RequestOf<D>,
    options?: CallOptions,
  ): Promise<ResponseOf<D>>;
  /** `call`, keeping the envelope's message of a success reply (the gateway passes it on to HTTP). */
  callWithMessage<D extends RpcDescriptor>(
    descriptor: D,
    request: RequestOf<D>,
    options?: CallOptions,
  ): Promise<Answer<ResponseOf<D>>>;
  /** Answer a descriptor's calls. Validates requests (and responses) against the descriptor's schemas. */
  serve<D extends RpcDescriptor>(descriptor: D, handler: RpcHandler<D>): Promise<void>;
  /**
   * Where this bus keeps its answers to keyed requests (`idempotency`): a repeated one is answered again
   * without running its handler, on any instance that shares `answers` (rpc-answers.ts `answerOnce`). One
   * store for every RPC the bus serves: a process serves one service.
   */
  keepAnswers(answers: RpcAnswers): void;
  /** Publish a fact; resolves once the broker confirmed it. */
  publish<D extends EventDescriptor>(
    descriptor: D,
    payload: PayloadOf<D>,
    options?: PublishOptions,
  ): Promise<void>;
  /** Consume a fact on the durable queue `<consumer>.<event name>`, with retries and dead-lettering. */
  subscribe<D extends EventDescriptor>(
    consumer: string,
    descriptor: D,
    handler: EventHandler<D>,
    options?: SubscribeOptions,
  ): Promise<void>;
  /**
   * Keeps an entry of the process's own in the journal, if the bus has one (the gateway's summary of each
   * HTTP request); nothing otherwise. Never fails and never waits.
   */
  note(note: JournalNote): void;
  /** True while the broker connection is up. */
  isConnected(): boolean;
  close(): Promise<void>;
}
