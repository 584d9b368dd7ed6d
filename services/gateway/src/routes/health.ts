import type { Bus } from "@fundraise/bus";
import type { FastifyInstance } from "fastify";
import type { Redis } from "ioredis";

/** Liveness says the process runs; readiness says it can serve (broker and Redis reachable). */
export function registerHealthRoutes(app: FastifyInstance, deps: { bus: Bus; redis: Redis }): void {
  app.get("/healthz", { schema: { tags: ["Operations"], summary: "Liveness" } }, async () => ({
    data: "ok",
    success: true,
    message: null,
  }));
  app.get(
    "/readyz",
    { schema: { tags: ["Operations"], summary: "Readiness: broker and Redis" } },
    async (_r, reply) => {
      const broker = deps.bus.isConnected();
      const redis = await deps.redis
        .ping()
        .then((pong) => pong === "PONG")
        .catch(() => false);
      const ready = broker && redis;
      return reply.code(ready ? 200 : 503).send({
        data: { broker, redis },
        success: ready,
        message: ready ? null : "not ready",
      });
    },
  );
}
