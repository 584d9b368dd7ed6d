/**
 * When tracing is on, and what this process's traces are called. No OpenTelemetry import here: this is
 * read by every process, traced or not (see telemetry.ts).
 */

/** Paths whose requests are not traced: probes and scrapes, several a second, never a user's request. */
export const UNTRACED_PATHS: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/metrics"]);

/**
 * Tracing is on when the standard OTEL_EXPORTER_OTLP_ENDPOINT (or its traces-only variant) is set, and
 * OTEL_SDK_DISABLED is not `true`.
 */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  return Boolean(endpoint?.trim()) && env.OTEL_SDK_DISABLED?.trim().toLowerCase() !== "true";
}

/**
 * `fundraise-<service>`: OTEL_SERVICE_NAME when set, else the image's SERVICE, else the `services/<name>/`
 * directory of the entry point (`services/users/src/main.ts` → `fundraise-users`).
 */
export function serviceNameOf(env: NodeJS.ProcessEnv, entry: string | undefined): string {
  if (env.OTEL_SERVICE_NAME?.trim()) return env.OTEL_SERVICE_NAME.trim();
  const service = env.SERVICE?.trim() || /(?:^|[/\\])services[/\\]([^/\\]+)[/\\]/.exec(entry ?? "")?.[1];
  return `fundraise-${service ?? "process"}`;
}

/** What the started SDK leaves for the process's shutdown (set by telemetry-sdk.ts). */
interface StartedTelemetry {
  shutdown(): Promise<void>;
}

const STARTED = Symbol.for("fundraise.telemetry");

export function setStartedTelemetry(started: StartedTelemetry): void {
  (globalThis as { [STARTED]?: StartedTelemetry })[STARTED] = started;
}

/** True once the SDK runs in this process (never when tracing is off). */
export function tracingStarted(): boolean {
  return (globalThis as { [STARTED]?: StartedTelemetry })[STARTED] !== undefined;
}

/**
 * Exports the spans still buffered and stops the SDK; nothing when tracing is off. Never rejects: a
 * collector that cannot be reached is the error it resolves with (the spans are lost, the exit goes on).
 */
export async function stopTelemetry(): Promise<unknown> {
  try {
    await (globalThis as { [STARTED]?: StartedTelemetry })[STARTED]?.shutdown();
    return undefined;
  } catch (error) {
    return error;
  }
}
