/**
 * A process as a service starts it, with the tracing preload (telemetry.int.test.ts): one log line and one
 * span made through the bus's hook, then the exit a service makes (the telemetry step exports what is
 * buffered). Its last line says what the preload did.
 */
import { rpcClientSpan } from "@fundraise/bus";
import pg from "pg";
import { createLogger } from "../logger.ts";
import { stopTelemetry, tracingStarted } from "../telemetry-env.ts";

// The API's global registry: the SDK registers its tracer provider there.
const api = (globalThis as Record<symbol, Record<string, unknown> | undefined>)[
  Symbol.for("opentelemetry.js.api.1")
];
const span = rpcClientSpan("probe.call", "probe", undefined);
span.run(() => createLogger({ service: "probe" }).info("inside the span"));
span.end();
const stopped = await stopTelemetry();
const query = pg.Client.prototype.query as { __wrapped?: boolean };
process.stdout.write(
  `${JSON.stringify({
    started: tracingStarted(),
    tracerProvider: api?.trace !== undefined,
    pgPatched: query.__wrapped === true,
    traceparent: span.traceparent ?? null,
    ...(stopped === undefined ? {} : { exportFailed: String(stopped) }),
  })}\n`,
);
