import { HTTP_STATUS_OF_KIND, isAppError } from "@fundraise/protocol";
import {
  type Context,
  context,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from "@opentelemetry/api";

/**
 * The bus's spans (OpenTelemetry), one per call, request, publish and delivery, linked by the W3C
 * `traceparent` each message carries: a caller's span is the parent of the server's, a publish's the
 * parent of each consumer's. Only the API is used here: with no SDK started (the default, see
 * @fundraise/service-kit/telemetry) every span is a no-op and a message carries the traceparent it was
 * given, as before. The hooks in rpc-client, rpc-server, event-publisher and event-subscriber are one
 * line each.
 *
 * The bus makes these spans itself rather than through the amqplib instrumentation: several calls share
 * one AMQP message (rpc-batch.ts), replies come back on direct reply-to with no trace of their own, and an
 * event from the outbox is published long after the request that wrote it.
 */
const tracer = trace.getTracer("@fundraise/bus");

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A W3C traceparent's span context (remote), or undefined when it is absent or malformed. */
export function parseTraceparent(value: string | undefined): SpanContext | undefined {
  if (value === undefined) return undefined;
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (!match) return undefined;
  const [, traceId, spanId, flags] = match as unknown as [string, string, string, string];
  const spanContext: SpanContext = {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  return trace.isSpanContextValid(spanContext) ? spanContext : undefined;
}

export function formatTraceparent(spanContext: SpanContext): string {
  const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, "0");
  return `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`;
}

/** The traceparent of the span active where this is called (undefined without one). */
export function activeTraceparent(): string | undefined {
  const spanContext = trace.getActiveSpan()?.spanContext();
  return spanContext && trace.isSpanContextValid(spanContext) ? formatTraceparent(spanContext) : undefined;
}

/** A span of the bus, as its hook sees it. */
export interface BusSpan {
  /** What the message (or the handler's context) carries on: this span, or the traceparent given. */
  readonly traceparent: string | undefined;
  /** Runs `work` with this span active: the database and cache calls in it become its children. */
  run<T>(work: () => T): T;
  /**
   * Ends the span. `failure`, when the work failed, marks it failed with its message unless it is an
   * answer about the request itself (an AppError of a 4xx kind: validation, not found, …).
   */
  end(failure?: unknown): void;
}

function busSpan(span: Span, parent: Context, given: string | undefined): BusSpan {
  // Not recording: no SDK (or sampled out); the message carries what it was given, and nothing runs
  // inside a context of ours.
  if (!span.isRecording()) {
    return { traceparent: given, run: (work) => work(), end: () => undefined };
  }
  const active = trace.setSpan(parent, span);
  return {
    traceparent: formatTraceparent(span.spanContext()),
    run: (work) => context.with(active, work),
    end(failure) {
      if (failure !== undefined && !(isAppError(failure) && HTTP_STATUS_OF_KIND[failure.kind] < 500)) {
        const message = failure instanceof Error ? failure.message : String(failure);
        span.setStatus({ code: SpanStatusCode.ERROR, message });
      }
      span.end();
    },
  };
}

/** The parent of an outgoing message: the traceparent the caller passed on, else the active span. */
function outgoingParent(traceparent: string | undefined): Context {
  const given = parseTraceparent(traceparent);
  return given ? trace.setSpanContext(context.active(), given) : context.active();
}

/** The parent of an incoming message: the traceparent it carries, or none (a new trace). */
function incomingParent(traceparent: string | undefined): Context {
  const carried = parseTraceparent(traceparent);
  return carried ? trace.setSpanContext(ROOT_CONTEXT, carried) : ROOT_CONTEXT;
}

/** An RPC call, from publish to reply (or timeout). */
export function rpcClientSpan(rpc: string, service: string, traceparent: string | undefined): BusSpan {
  const parent = outgoingParent(traceparent);
  const span = tracer.startSpan(
    rpc,
    {
      kind: SpanKind.CLIENT,
      attributes: { "rpc.system": "fundraise-bus", "rpc.service": service, "rpc.method": rpc },
    },
    parent,
  );
  return busSpan(span, parent, traceparent);
}

/** An RPC request handled by a server, child of its caller's span. */
export function rpcServerSpan(rpc: string, service: string, traceparent: string | undefined): BusSpan {
  const parent = incomingParent(traceparent);
  const span = tracer.startSpan(
    rpc,
    {
      kind: SpanKind.SERVER,
      attributes: { "rpc.system": "fundraise-bus", "rpc.service": service, "rpc.method": rpc },
    },
    parent,
  );
  return busSpan(span, parent, traceparent);
}

/** An event published (until the broker confirmed it), child of the write that caused it. */
export function publishSpan(event: string, traceparent: string | undefined): BusSpan {
  const parent = outgoingParent(traceparent);
  const span = tracer.startSpan(
    `publish ${event}`,
    {
      kind: SpanKind.PRODUCER,
      attributes: {
        "messaging.system": "rabbitmq",
        "messaging.operation.type": "send",
        "messaging.destination.name": event,
      },
    },
    parent,
  );
  return busSpan(span, parent, traceparent);
}

/** One delivery of an event to a consumer, child of its publish. */
export function processSpan(
  event: string,
  consumer: string,
  attempt: number,
  traceparent: string | undefined,
): BusSpan {
  const parent = incomingParent(traceparent);
  const span = tracer.startSpan(
    `process ${event}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        "messaging.system": "rabbitmq",
        "messaging.operation.type": "process",
        "messaging.destination.name": event,
        "messaging.consumer.group.name": consumer,
        "bus.attempt": attempt,
      },
    },
    parent,
  );
  return busSpan(span, parent, traceparent);
}
