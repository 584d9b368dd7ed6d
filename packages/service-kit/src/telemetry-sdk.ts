/**
 * The OpenTelemetry SDK of a traced process, started by the preload (telemetry.ts) only when tracing is
 * on: traces over OTLP/HTTP (`OTEL_EXPORTER_OTLP_PROTOCOL` `http/protobuf`, the default, or `http/json`)
 * to OTEL_EXPORTER_OTLP_ENDPOINT, batched (OTEL_BSP_*), as `fundraise-<service>`. The instrumentations:
 * fastify (@fastify/otel: a SERVER span per request), HTTP (outgoing requests inside a trace), pg and
 * ioredis (only inside a trace: the outbox relay's and the indexer's polling start none). RPC and events
 * have the bus's own spans (@fundraise/bus trace-context.ts). Metrics and logs are not exported here:
 * metrics are Prometheus's (`/metrics`), logs stay on stdout with trace_id and span_id (logger.ts).
 */
import { randomBytes } from "node:crypto";
import { register } from "node:module";
import { FastifyOtelInstrumentation } from "@fastify/otel";
import { OTLPTraceExporter as OtlpJsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as OtlpProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";
import { IORedisInstrumentation } from "@opentelemetry/instrumentation-ioredis";
import { PgInstrumentation } from "@opentelemetry/instrumentation-pg";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { createAddHookMessageChannel } from "import-in-the-middle";
import { serviceNameOf, setStartedTelemetry, UNTRACED_PATHS } from "./telemetry-env.ts";

const PROTOCOLS = ["http/protobuf", "http/json"] as const;

/**
 * Trace ids led by the time in ms, laid out as a UUIDv7 (@fundraise/bus ids.ts `timedTraceId`, not imported:
 * the preload loads nothing of the bus): `pnpm replay -- --trace <id>` goes straight to the trace's moment
 * in the journal. W3C asks for ids that are unique, which these are (74 random bits beside the time).
 */
class TimedIdGenerator {
  generateTraceId(): string {
    const time = Date.now().toString(16).padStart(12, "0");
    const random = randomBytes(10).toString("hex");
    const variant = "89ab"[Number.parseInt(random[3]!, 16) & 3]!;
    return `${time}7${random.slice(0, 3)}${variant}${random.slice(4, 19)}`;
  }

  generateSpanId(): string {
    return randomBytes(8).toString("hex");
  }
}

/** The exporter OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL names; any other value stops the process, named. */
function exporterOf(env: NodeJS.ProcessEnv) {
  const name = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
    ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
    : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const protocol = env[name]?.trim() || "http/protobuf";
  if (protocol === "http/json") return new OtlpJsonExporter();
  if (protocol === "http/protobuf") return new OtlpProtobufExporter();
  throw new Error(`${name}=${protocol} is not supported: use ${PROTOCOLS.join(" or ")} (OTLP over HTTP).`);
}

export async function startTelemetry(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const traceExporter = exporterOf(env);
  // The ESM hook, limited to the modules an instrumentation asked for (import-in-the-middle's message
  // channel): everything else loads untouched.
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register("import-in-the-middle/hook.mjs", import.meta.url, registerOptions);
  const sdk = new NodeSDK({
    serviceName: serviceNameOf(env, process.argv[1]),
    idGenerator: new TimedIdGenerator(),
    traceExporter,
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      // Incoming requests are fastify's (below): one span per request, named by its route. This one
      // traces outgoing HTTP inside a trace (the gateway's IPFS calls, say).
      new HttpInstrumentation({
        disableIncomingRequestInstrumentation: true,
        requireParentforOutgoingSpans: true,
      }),
      // The request's SERVER span, continuing a caller's traceparent; no span per lifecycle hook or for
      // the handler (six more spans a request): what they call (Redis, the services) is traced under it.
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        instrumentHooks: false,
        instrumentHandler: false,
        ignorePaths: (route) => UNTRACED_PATHS.has(route.url),
        requestHook: (span, request) =>
          span.updateName(`${request.method} ${request.routeOptions.url ?? ""}`),
      }),
      new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
    ],
  });
  sdk.start();
  setStartedTelemetry({ shutdown: () => sdk.shutdown() });
  // The loader has taken every module to hook before the entry point's imports load.
  await waitForAllMessagesAcknowledged();
}
