import type { Bus } from "@fundraise/bus";
import { ErrorCode, errors } from "@fundraise/protocol";
import type { Redis } from "ioredis";
import { send } from "../plugins/error-handler.ts";
import type { Server } from "../server.ts";

export interface Readiness {
  ready: boolean;
  broker: boolean;
  redis: boolean;
}

/** Whether this gateway can serve: broker and Redis reachable. */
export function createReadinessCheck(deps: { bus: Bus; redis: Redis }): () => Promise<Readiness> {
  return async () => {
    const broker = deps.bus.isConnected();
    const redis = await deps.redis
      .ping()
      .then((pong) => pong === "PONG")
      .catch(() => false);
    return { ready: broker && redis, broker, redis };
  };
}

/**
 * Liveness says the process runs; readiness says it can serve. The public port says only "ready" or
 * "not ready"; which dependency is missing goes to the log (when it changes) and to the internal
 * port's `/readyz` (internal.ts).
 */
export function registerHealthRoutes(app: Server, check: () => Promise<Readiness>): void {
  const config = { cacheControl: "no-store" };
  app.get("/healthz", { config, schema: { tags: ["Operations"], summary: "Liveness" } }, async () => ({
    data: "ok",
    success: true,
    message: null,
  }));
  let wasReady: boolean | undefined;
  app.get(
    "/readyz",
    { config, schema: { tags: ["Operations"], summary: "Readiness: can this instance serve" } },
    async (request, reply) => {
      const state = await check();
      if (state.ready !== wasReady) {
        wasReady = state.ready;
        if (state.ready) request.log.info({ readiness: state }, "ready");
        else request.log.warn({ readiness: state }, "not ready");
      }
      if (!state.ready) return send(reply, errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, "not ready"));
      return reply.send({ data: "ready", success: true, message: null });
    },
  );
}
