import type { Answer, Bus } from "@fundraise/bus";
import type { ResponseOf, RpcDescriptor } from "@fundraise/protocol";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Server } from "../server.ts";
import type { AnonymousRoute, InputSchemas, RpcRoute, SignedInRoute } from "./route.ts";
import { answerFailure, type Delivery, sendAnswer, shapeAnswer } from "./steps/answer.ts";
import { forward } from "./steps/forward.ts";
import { claimKey, releaseKey } from "./steps/idempotency.ts";
import { buildRequest, inputOf, versionOf } from "./steps/request.ts";
import { routeSchema } from "./steps/schema.ts";
import { versionedAnswers } from "./versioned.ts";

/**
 * Adds one route of the interface (routes/route.ts: what a route says). A request of it goes through
 * these steps, in this order; the first three are fastify's, set up by the route's options:
 *
 *  1. authenticate and authorize: plugins/auth.ts's hook, by `access` (401 without a caller the route
 *     needs, 403 for a role it does not admit), before anything else is read;
 *  2. read the body: fastify's JSON parser, or the route's own `body.reader` (readBody, below);
 *  3. validate: the `input` schemas (steps/schema.ts), after the wire's own checks (plugins/wire.ts,
 *     plugins/plain-numbers.ts);
 *  4. build the RPC request: `request`, given the caller (steps/request.ts);
 *  5. answer from the version: 304 to a client that holds it, or the copy kept (`cache.version`);
 *  6. claim the Idempotency-Key, on writes: its first answer again, or the key claimed
 *     (steps/idempotency.ts);
 *  7. forward the RPC, again while `retry` mends its failure (steps/forward.ts); a failure frees the key
 *     and is the answer;
 *  8. shape the answer: headers, `data`, the envelope (steps/answer.ts);
 *  9. send it: kept under its version, by its content's ETag, kept with its key, or as it is.
 */
// One signature per kind of route, so that `access` picks the caller's type even as an array of roles.
export function registerRpcRoute<D extends RpcDescriptor, S extends InputSchemas>(
  app: Server,
  bus: Bus,
  route: AnonymousRoute<D, S>,
): void;
export function registerRpcRoute<D extends RpcDescriptor, S extends InputSchemas>(
  app: Server,
  bus: Bus,
  route: SignedInRoute<D, S>,
): void;
export function registerRpcRoute<D extends RpcDescriptor, S extends InputSchemas>(
  app: Server,
  bus: Bus,
  route: RpcRoute<D, S>,
): void {
  readBody(app, route, (context) =>
    context.route({
      method: route.method,
      url: route.url,
      ...(route.body?.limit ? { bodyLimit: route.body.limit } : {}),
      config: routeConfig(route),
      schema: routeSchema(route),
      handler: handlerOf(context, bus, route),
    }),
  );
}

/**
 * What the hooks read of the route: its `access` (step 1, plugins/auth.ts), its own rate limit
 * (@fastify/rate-limit) and its `Cache-Control` (plugins/security.ts).
 */
function routeConfig<D extends RpcDescriptor, S extends InputSchemas>(route: RpcRoute<D, S>) {
  const control = route.cache?.control;
  return {
    access: route.access,
    ...(route.perMinute ? { rateLimit: { max: route.perMinute, timeWindow: 60_000 } } : {}),
    // A read a client may keep asks again with If-None-Match every time.
    ...(control || revalidated(route) ? { cacheControl: control ?? "private, no-cache" } : {}),
  };
}

/**
 * 2. Read the body. A route with its own `body.reader` (the upload routes, which stream theirs to IPFS)
 * is added to an encapsulated context of its own, which the reader sets up first: its parser replaces
 * fastify's JSON parser there, and nowhere else.
 */
function readBody<D extends RpcDescriptor, S extends InputSchemas>(
  app: Server,
  route: RpcRoute<D, S>,
  add: (context: Server) => void,
): void {
  const reader = route.body?.reader;
  if (!reader) {
    add(app);
    return;
  }
  app.register(async (child) => {
    const context = child as unknown as Server;
    reader(context);
    add(context);
  });
}

/** A read whose answer a client may keep and revalidate with `If-None-Match` (`cache`, routes/versioned.ts). */
function revalidated<D extends RpcDescriptor, S extends InputSchemas>(route: RpcRoute<D, S>): boolean {
  return (
    route.method === "GET" &&
    !route.answer?.bare &&
    (route.cache?.revalidate === true || route.cache?.version !== undefined)
  );
}

/** Steps 4 to 9, for each request. */
function handlerOf<D extends RpcDescriptor, S extends InputSchemas>(
  app: Server,
  bus: Bus,
  route: RpcRoute<D, S>,
) {
  const versioned = route.cache?.version ? versionedAnswers() : null;
  const reads = revalidated(route);
  const writes = [route.method].flat().some((method) => method !== "GET");
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const input = inputOf<S>(request);
    // 4. Build the RPC request (a validation error answers here: nothing is sent).
    const rpcRequest = await buildRequest(route, input, request.caller);
    // 5. Answer from the version.
    const version = versioned ? await versionOf(route, input, request.caller) : null;
    if (versioned && version !== null && (await versioned.answer(version, request, reply))) return reply;
    // 6. Claim the Idempotency-Key.
    const key = writes ? await claimKey(app, request, reply, rpcRequest) : null;
    if (key?.kind === "replayed") return reply;
    const claimed = key?.kind === "claimed" ? key : null;
    // 7. Forward the RPC.
    let answer: Answer<ResponseOf<D>>;
    try {
      answer = await forward(bus, route, rpcRequest, request, claimed?.requestKey);
    } catch (error) {
      await releaseKey(claimed, request);
      return answerFailure(route, error, request, reply);
    }
    // 8. Shape the answer.
    const shaped = await shapeAnswer(route, answer, input, reply);
    if ("sent" in shaped) return shaped.sent;
    // 9. Send it.
    const delivery: Delivery =
      versioned && version !== null
        ? { kind: "versioned", answers: versioned, version }
        : reads
          ? { kind: "by-content" }
          : claimed
            ? { kind: "kept", claimed }
            : { kind: "plain" };
    return sendAnswer(route, delivery, answer, shaped.body, request, reply);
  };
}
