import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The tracing preload in a real process (test/telemetry-probe.ts, started as serviceNodeArgs starts a
// service), exporting to a real OTLP/HTTP receiver in this process. When tracing is on: telemetry-env.test.ts.

const root = join(import.meta.dirname, "..");
let exports: { path: string; body: string }[] = [];
let endpoint = "";
const receiver = createServer((req, res) => {
  let body = "";
  req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
  req.on("end", () => {
    exports.push({ path: req.url ?? "", body });
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
});

beforeAll(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

/** Runs the probe with `env` (no OTEL_* variable of this process's), its output once it exited. */
function probe(
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith("OTEL_")),
  );
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "--import", "@fundraise/service-kit/telemetry", "src/test/telemetry-probe.ts"],
    { cwd: root, env: { ...inherited, ...env }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

/** The probe's report: its line with `started` (its log line may come after it). */
const report = (stdout: string) =>
  JSON.parse(stdout.split("\n").find((line) => line.startsWith('{"started"')) ?? "{}");

describe("the tracing preload", () => {
  it("with OTEL_EXPORTER_OTLP_ENDPOINT unset: no SDK, nothing patched, nothing exported, the given traceparent only", async () => {
    exports = [];
    const run = await probe({});
    expect(run.code, run.stderr).toBe(0);
    expect(report(run.stdout)).toEqual({
      started: false,
      tracerProvider: false,
      pgPatched: false,
      traceparent: null,
    });
    expect(run.stdout).not.toContain("trace_id");
    // The probe exited: anything it would have exported has been sent.
    expect(exports).toEqual([]);
  });

  it("with it set: the SDK started, pg instrumented, the span exported as fundraise-<service> over http/json, its ids on the log line", async () => {
    exports = [];
    const run = await probe({
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      SERVICE: "probe",
    });
    expect(run.code, run.stderr).toBe(0);
    const seen = report(run.stdout);
    expect(seen).toMatchObject({ started: true, tracerProvider: true, pgPatched: true });
    const [, traceId, spanId] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(seen.traceparent) ?? [];
    expect(traceId).toBeDefined();
    expect(run.stdout).toContain(`"trace_id":"${traceId}","span_id":"${spanId}"`);
    expect(exports.map((e) => e.path)).toEqual(["/v1/traces"]);
    const body = JSON.parse(exports[0]?.body ?? "{}");
    const resource = body.resourceSpans[0].resource.attributes;
    expect(resource).toContainEqual({ key: "service.name", value: { stringValue: "fundraise-probe" } });
    const span = body.resourceSpans[0].scopeSpans[0].spans[0];
    expect(span).toMatchObject({ traceId, spanId, name: "probe.call" });
  });

  it("with the collector unreachable: the process runs and exits as usual, the spans dropped", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const run = await probe({
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_EXPORTER_OTLP_TIMEOUT: "1000",
      SERVICE: "probe",
    });
    expect(run.code, run.stderr).toBe(0);
    expect(report(run.stdout)).toMatchObject({
      started: true,
      tracerProvider: true,
      exportFailed: expect.stringContaining("ECONNREFUSED"),
    });
  });

  it("refuses a protocol other than OTLP over HTTP, naming the variable", async () => {
    const run = await probe({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain("OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported");
  });
});
