import { describe, expect, it } from "vitest";
import { serviceNameOf, tracingWanted } from "./telemetry-env.ts";

// When a process starts tracing, and under which name; the preload in a real process: telemetry.int.test.ts.

describe("when tracing is on, and as what", () => {
  it("needs an endpoint, and OTEL_SDK_DISABLED not true", () => {
    expect(tracingWanted({})).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: " " })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" })).toBe(
      true,
    );
    expect(
      tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" }),
    ).toBe(false);
  });

  it("names the service fundraise-<service>", () => {
    expect(serviceNameOf({}, "services/users/src/main.ts")).toBe("fundraise-users");
    expect(serviceNameOf({}, "/app/services/chain-indexer/dist/main.js")).toBe("fundraise-chain-indexer");
    expect(serviceNameOf({ SERVICE: "auth" }, "whatever.js")).toBe("fundraise-auth");
    expect(serviceNameOf({ OTEL_SERVICE_NAME: "custom" }, "services/users/src/main.ts")).toBe("custom");
  });
});
