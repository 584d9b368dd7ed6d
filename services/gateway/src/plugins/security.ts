import type { Server } from "../server.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** This route's `Cache-Control`; RPC routes default to `no-store` (docs/adr/0008-gateway-sessions-and-edge.md). */
    cacheControl?: string;
  }
}

/** The CSP of every answer but the API docs: nothing may load in it, nothing may frame it. */
export const API_CSP = "default-src 'none';base-uri 'none';form-action 'none';frame-ancestors 'none'";

/** The essential few of them, for the answers written outside fastify's lifecycle (client errors). */
export const BASELINE_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": API_CSP,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
};

/**
 * The security headers of every answer: what helmet sends with this configuration (a CSP that allows
 * nothing, frame denial, nosniff, HSTS, referrer policy, the cross-origin policies...), written out once.
 * Helmet computed them on every request (parsing the CSP directives each time), a measurable share of a
 * small read's cost at the gateway; `security.int.test.ts` holds them to helmet's output.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": API_CSP,
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "origin-agent-cluster": "?1",
  "referrer-policy": "no-referrer",
  "strict-transport-security": "max-age=31536000; includeSubDomains",
  "x-content-type-options": "nosniff",
  "x-dns-prefetch-control": "off",
  "x-download-options": "noopen",
  "x-frame-options": "DENY",
  "x-permitted-cross-domain-policies": "none",
  "x-xss-protection": "0",
};

/**
 * Security headers on every answer, and the route's `Cache-Control`: every route of the interface answers
 * `no-store` unless it declares otherwise, since its answers are sign-in material or depend on the
 * caller. The docs set their own CSP (plugins/openapi.ts).
 */
export async function registerSecurityHeaders(app: Server): Promise<void> {
  app.addHook("onRequest", (request, reply, done) => {
    reply.headers(SECURITY_HEADERS);
    const config = request.routeOptions.config;
    const cacheControl = config?.cacheControl ?? (config?.access === undefined ? undefined : "no-store");
    if (cacheControl) reply.header("cache-control", cacheControl);
    done();
  });
}
