import { activeTraceparent, type Bus, parseTraceparent } from "@fundraise/bus";
import { UNTRACED_PATHS } from "@fundraise/service-kit";
import type { Server } from "../server.ts";

/**
 * One journal entry per answered request, the root of its story (`pnpm replay -- --request <id>`): method,
 * route pattern, status and duration. Never a body, a query string or the client's address: the route
 * pattern names the call without the values in it (a verification link's e-mail and token are in its
 * query). Probes and metrics scrapes are left out, as tracing leaves them.
 */
export function journalRequests(app: Server, bus: Bus): void {
  app.addHook("onResponse", (request, reply, done) => {
    const route = request.routeOptions.url;
    if (route !== undefined && UNTRACED_PATHS.has(route)) return done();
    const given = request.headers.traceparent;
    const durationMs = Math.round(reply.elapsedTime);
    bus.note({
      kind: "http",
      id: `http:${request.id}`,
      name: `${request.method} ${route ?? "(no route)"}`,
      at: Date.now(),
      requestId: request.id,
      traceparent:
        activeTraceparent() ?? (typeof given === "string" && parseTraceparent(given) ? given : undefined),
      summary: { method: request.method, route: route ?? null, status: reply.statusCode, durationMs },
    });
    done();
  });
}
