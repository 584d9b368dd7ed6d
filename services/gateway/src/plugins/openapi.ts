import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { Server } from "../server.ts";

/** The OpenAPI document is generated from the same route schemas that validate requests. */
export async function registerOpenApi(app: Server, publicBaseUrl: string): Promise<void> {
  await app.register(swagger, {
    // Shared schemas (the event stream's messages) by their own names, not `def-N`.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === "string" ? json.$id : `def-${i}`,
    },
    openapi: {
      openapi: "3.0.3",
      info: {
        title: "Project Fundraising Service",
        description:
          "Every answer is the envelope `{data, success, message}`. Routes match case-insensitively, " +
          "with or without a trailing slash; request bodies match field names case-insensitively.",
        version: "1.0.0",
      },
      servers: [{ url: publicBaseUrl }],
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } } },
      tags: [
        { name: "Authentication" },
        { name: "User" },
        { name: "Project" },
        { name: "EventDebug" },
        { name: "Operations" },
      ],
    },
  });
  await app.register(swaggerUi, { routePrefix: "/docs", staticCSP: docsCsp(publicBaseUrl) });
}

/**
 * The CSP of the docs pages, in place of the API's "nothing at all": Swagger UI loads its own scripts
 * and styles (no inline script), fetches the document and, for "Try it out", the API at
 * PUBLIC_BASE_URL. Framing stays denied.
 */
export function docsCsp(publicBaseUrl: string): string {
  return [
    "default-src 'self'",
    "base-uri 'self'",
    `connect-src 'self' ${new URL(publicBaseUrl).origin}`,
    "font-src 'self' data:",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "img-src 'self' data: https://validator.swagger.io",
    "object-src 'none'",
    "script-src 'self'",
    "script-src-attr 'none'",
    "style-src 'self'",
  ].join("; ");
}
