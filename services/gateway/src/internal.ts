import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { ErrorCode, errors } from "@fundraise/protocol";
import type { Logger, ProcessMetrics } from "@fundraise/service-kit";
import Fastify, { LogController } from "fastify";
import { registerErrorHandling, send } from "./plugins/error-handler.ts";
import type { Readiness } from "./routes/health.ts";
import type { Server } from "./server.ts";

/**
 * The gateway's internal port (METRICS_HOST:METRICS_PORT, loopback by default): Prometheus metrics and
 * readiness with its details, for scrapers and operators, never on the public port.
 */
export async function buildInternalApp(deps: {
  /** The process's metrics (service-kit), the gateway's HTTP histogram among them. */
  scrape: Pick<ProcessMetrics, "scrape" | "contentType">;
  readiness: () => Promise<Readiness>;
  log: Logger;
}): Promise<Server> {
  const app = Fastify({
    loggerInstance: deps.log,
    logController: new LogController({ disableRequestLogging: true }),
  }).withTypeProvider<TypeBoxTypeProvider>();
  registerErrorHandling(app);
  app.get("/metrics", async (_request, reply) =>
    reply.type(deps.scrape.contentType).send(await deps.scrape.scrape()),
  );
  app.get("/readyz", async (_request, reply) => {
    const { ready, broker, redis } = await deps.readiness();
    if (ready) return reply.send({ data: { broker, redis }, success: true, message: null });
    const down = [broker ? [] : ["broker"], redis ? [] : ["redis"]].flat();
    return send(
      reply,
      errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, `not ready: ${down.join(", ")} unreachable`),
    );
  });
  await app.ready();
  return app;
}
