import type { FastifySchema } from "fastify";
import type { Server } from "../server.ts";
import type { Access } from "./auth.ts";

/** One registered method + URL, as fastify was given it (schemas are the JSON schemas that validate). */
export interface RouteEntry {
  method: string;
  url: string;
  schema: FastifySchema | undefined;
  /** Undefined for routes outside the interface (health, docs). */
  access: Access | undefined;
}

declare module "fastify" {
  interface FastifyInstance {
    /** Every route of the app, in registration order: tests derive their cases from it. */
    routeTable: readonly RouteEntry[];
  }
}

/** Records every route registered after it (register it first). HEAD twins of GET routes are left out. */
export function registerRouteTable(app: Server): void {
  const table: RouteEntry[] = [];
  app.decorate("routeTable", table);
  app.addHook("onRoute", (route) => {
    for (const method of [route.method].flat()) {
      if (method === "HEAD") continue;
      table.push({ method, url: route.url, schema: route.schema, access: route.config?.access });
    }
  });
}
