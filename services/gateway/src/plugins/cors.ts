import cors from "@fastify/cors";
import type { Server } from "../server.ts";

/** What a browser client on another origin may send (rules.md §7.5: "Browsers on another origin work"). */
export const CORS_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
export const CORS_HEADERS = ["Authorization", "Content-Type", "X-Request-Id", "Idempotency-Key"] as const;
/** Browsers cache a preflight this long (seconds); Chromium caps it at 7200. */
export const CORS_MAX_AGE = 600;

/**
 * CORS for the configured origins (`CORS_ORIGINS`: a list in production, `*` only locally, which
 * reflects any origin). A preflight without `Origin` is answered like any other (204), not fastify's
 * plain-text 400.
 */
export async function registerCors(app: Server, origins: true | readonly string[]): Promise<void> {
  await app.register(cors, {
    origin: origins === true ? true : [...origins],
    methods: [...CORS_METHODS],
    allowedHeaders: [...CORS_HEADERS],
    exposedHeaders: ["x-request-id", "x-error-code", "x-indexed-block"],
    maxAge: CORS_MAX_AGE,
    strictPreflight: false,
  });
}
