import helmet from "@fastify/helmet";
import type { Server } from "../server.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** This route's `Cache-Control`; RPC routes default to `no-store` (docs/decisions.md, Gateway). */
    cacheControl?: string;
  }
}

/** The CSP of every answer but the API docs: nothing may load in it, nothing may frame it. */
export const API_CSP = "default-src 'none';base-uri 'none';form-action 'none';frame-ancestors 'none'";

/** What helmet sets, for the few answers written outside fastify's lifecycle (client errors). */
export const BASELINE_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": API_CSP,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
};

/**
 * Security headers on every answer (helmet: nosniff, frame denial, a CSP that allows nothing, HSTS,
 * referrer policy...) and the route's `Cache-Control`: every route of the interface answers
 * `no-store` unless it declares otherwise, since its answers are sign-in material or depend on the
 * caller. The docs set their own CSP (plugins/openapi.ts).
 */
export async function registerSecurityHeaders(app: Server): Promise<void> {
  await app.register(helmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        baseUri: ["'none'"],
        formAction: ["'none'"],
        frameAncestors: ["'none'"],
      },
    },
    frameguard: { action: "deny" },
  });
  app.addHook("onRequest", async (request, reply) => {
    const config = request.routeOptions.config;
    const cacheControl = config?.cacheControl ?? (config?.access === undefined ? undefined : "no-store");
    if (cacheControl) reply.header("cache-control", cacheControl);
  });
}
