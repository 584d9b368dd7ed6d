import type { preValidationHookHandler, RouteOptions } from "fastify";
import type { Server } from "../server.ts";

/**
 * Adds `hook` to the preValidation hooks of each route registered later whose options `applies` to,
 * instead of to every request: a check of path numbers or body keys costs nothing on a route that has
 * neither (most reads), and a hook that finishes synchronously calls `done` without a promise.
 */
export function preValidationWhere(
  app: Server,
  applies: (route: RouteOptions) => boolean,
  hook: preValidationHookHandler,
): void {
  app.addHook("onRoute", (route) => {
    if (!applies(route as RouteOptions)) return;
    const own = route.preValidation;
    route.preValidation = [...(own === undefined ? [] : [own].flat()), hook] as typeof own;
  });
}
