import { describe, expect, it } from "vitest";
import {
  activeTraceparent,
  formatTraceparent,
  parseTraceparent,
  processSpan,
  publishSpan,
  rpcClientSpan,
  rpcServerSpan,
} from "../src/trace-context.ts";

// Without an OpenTelemetry SDK (tracing off, as in this process): the spans are no-ops and every
// message carries the traceparent it was given. The linking of real spans across processes is
// e2e/tracing.test.ts's.

const GIVEN = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

describe("traceparent", () => {
  it("parses a W3C traceparent and formats it back", () => {
    const parsed = parseTraceparent(GIVEN);
    expect(parsed).toEqual({
      traceId: "0af7651916cd43dd8448eb211c80319c",
      spanId: "b7ad6b7169203331",
      traceFlags: 1,
      isRemote: true,
    });
    expect(formatTraceparent(parsed as NonNullable<typeof parsed>)).toBe(GIVEN);
  });

  it("refuses malformed and all-zero ids", () => {
    for (const bad of [
      undefined,
      "",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
      "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      "00-00000000000000000000000000000000-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
      "00-0af7651916cd43dd8448eb211c80319z-b7ad6b7169203331-01",
    ]) {
      expect(parseTraceparent(bad), String(bad)).toBeUndefined();
    }
  });
});

describe("the bus's spans with tracing off", () => {
  it("carry the traceparent they were given, run the work as it is, and end quietly", () => {
    for (const span of [
      rpcClientSpan("users.count", "users", GIVEN),
      rpcServerSpan("users.count", "users", GIVEN),
      publishSpan("users.user.deleted", GIVEN),
      processSpan("users.user.deleted", "auth", 2, GIVEN),
    ]) {
      expect(span.traceparent).toBe(GIVEN);
      expect(span.run(() => 42)).toBe(42);
      expect(() => span.end(new Error("failed"))).not.toThrow();
    }
    expect(rpcClientSpan("users.count", "users", undefined).traceparent).toBeUndefined();
    expect(activeTraceparent()).toBeUndefined();
  });
});
