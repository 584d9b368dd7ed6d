import type { FastifyInstance } from "fastify";
import { collectDefaultMetrics, Histogram, Registry } from "prom-client";

/** Prometheus metrics of this process at `/metrics`: request latency by route and status, plus Node's. */
export function registerMetrics(app: FastifyInstance): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service: "gateway" });
  collectDefaultMetrics({ register: registry });
  const duration = new Histogram({
    name: "http_request_duration_seconds",
    help: "HTTP request latency",
    labelNames: ["method", "route", "status"],
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  app.addHook("onResponse", async (request, reply) => {
    duration.observe(
      // The route pattern, not the URL, keeps the label set bounded.
      { method: request.method, route: request.routeOptions.url ?? "unmatched", status: reply.statusCode },
      reply.elapsedTime / 1000,
    );
  });
  app.get("/metrics", { schema: { hide: true } }, async (_request, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  );
  return registry;
}
