/**
 * The tracing preload: `node --import tsx --import @fundraise/service-kit/telemetry <entry>` (serviceNodeArgs,
 * the image's run-service). With OTEL_EXPORTER_OTLP_ENDPOINT unset it does nothing and loads nothing
 * more; set, it registers the ESM hook the instrumentations need and starts the OpenTelemetry SDK
 * (telemetry-sdk.ts) before the entry point's imports are loaded. docs/adr/0031-tracing.md.
 */
import { isMainThread } from "node:worker_threads";
import { tracingWanted } from "./telemetry-env.ts";

if (isMainThread && tracingWanted()) {
  const { startTelemetry } = await import("./telemetry-sdk.ts");
  await startTelemetry();
}
