import { collectDefaultMetrics, Histogram, Registry } from "prom-client";
import type { Server } from "../server.ts";

/** The gateway's Prometheus registry: request latency by route and status, plus Node's own metrics. */
export interface GatewayMetrics {
  registry: Registry;
  requestDuration: Histogram<"method" | "route" | "status">;
}

/**
 * On `registry` (the process's, service-kit `processMetrics`, which has Node's own metrics), or on a registry
 * of its own with Node's metrics (an app built alone, in tests). Made once per registry.
 */
export function createMetrics(registry?: Registry): GatewayMetrics {
  if (!registry) {
    registry = new Registry();
    collectDefaultMetrics({ register: registry });
  }
  const existing = registry.getSingleMetric("http_request_duration_seconds");
  if (existing) return { registry, requestDuration: existing as GatewayMetrics["requestDuration"] };
  const requestDuration = new Histogram({
    name: "http_request_duration_seconds",
    help: "HTTP request latency",
    labelNames: ["method", "route", "status"],
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  return { registry, requestDuration };
}

/**
 * Times every answer of the public app. The metrics themselves are served on the internal port
 * (internal.ts), never here: the public port is reachable by anyone.
 */
export function observeRequests(app: Server, metrics: GatewayMetrics): void {
  app.addHook("onResponse", (request, reply, done) => {
    metrics.requestDuration.observe(
      // The route pattern, not the URL, keeps the label set bounded.
      { method: request.method, route: request.routeOptions.url ?? "unmatched", status: reply.statusCode },
      reply.elapsedTime / 1000,
    );
    done();
  });
}
