import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { Bus } from "@fundraise/bus";
import {
  type AppError,
  type Caller,
  ErrorCode,
  errors,
  HTTP_STATUS_OF_KIND,
  ok,
  type RequestOf,
  type ResponseOf,
  type RpcDescriptor,
  ServiceResponse,
  toAppError,
} from "@fundraise/protocol";
import type {
  FastifyReply,
  FastifyRequest,
  FastifySchema,
  HTTPMethods,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
} from "fastify";
import Type, { type TSchema } from "typebox";
import type { Access } from "../plugins/auth.ts";
import type { Server } from "../server.ts";
import { openApiNullables } from "./nullable.ts";
import { sendByContent, versionedAnswers } from "./versioned.ts";

export const ErrorEnvelope = Type.Object({
  data: Type.Null(),
  success: Type.Literal(false),
  message: Type.String(),
});

/**
 * The schemas of a route's path, query string and body. The TypeBox type provider turns each into the
 * type of the value it validates; a part left out is `unknown` and not validated.
 */
export interface InputSchemas {
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
}

/** A route's schema as fastify gets it: the input parts typed, the rest (tags, response...) open. */
type RouteSchema<S extends InputSchemas> = FastifySchema & {
  params: S["params"];
  querystring: S["querystring"];
  body: S["body"];
};

/** A request of a route with these input schemas, typed by the server's type provider (server.ts). */
type TypedRequest<S extends InputSchemas> = FastifyRequest<
  RouteGenericInterface,
  RawServerDefault,
  RawRequestDefaultExpression,
  RouteSchema<S>,
  TypeBoxTypeProvider
>;

export interface RouteInput<C extends Caller | null, S extends InputSchemas> {
  params: TypedRequest<S>["params"];
  query: TypedRequest<S>["query"];
  body: TypedRequest<S>["body"];
  /** Set from a verified token; never null on routes that need a signed-in caller. */
  caller: C;
  ip: string;
  request: FastifyRequest;
}

interface RouteOptions<D extends RpcDescriptor, S extends InputSchemas> {
  method: HTTPMethods | HTTPMethods[];
  url: string;
  tag: string;
  summary: string;
  /** Path, query and body schemas (`{}` when the route takes none): they validate and type the input. */
  input: S;
  rpc: D;
  /** The HTTP `data` schema when it differs from the RPC's response. */
  response?: TSchema;
  /** The HTTP `data` made of the RPC's result (it may read more, e.g. files from IPFS for withHex). */
  data?: (result: ResponseOf<D>, input: Omit<RouteInput<Caller | null, S>, "caller">) => unknown;
  /** Response headers taken from the RPC's result (what the `data` mapping leaves out of the body). */
  headers?: (result: ResponseOf<D>) => Record<string, string>;
  status?: 200 | 201;
  /**
   * The request to send again after the RPC failed, when the route can mend the failure (an upload whose
   * content was released meanwhile pins it again: uploads/released.ts); null: the failure is the answer.
   */
  retry?: (error: AppError, sent: RequestOf<D>, request: FastifyRequest) => Promise<RequestOf<D> | null>;
  /** The status from the result, when it is not always `status` (both are in the document). */
  statusOf?: (result: ResponseOf<D>) => 200 | 201;
  bodyLimit?: number;
  /** Requests per minute per IP for this route, when stricter than the global limit. */
  perMinute?: number;
  /** Replaces the JSON envelope (the verify-email page for browsers); undefined keeps it. */
  send?: (reply: FastifyReply, request: FastifyRequest, data: unknown) => FastifyReply | undefined;
  /** The same for failures; undefined hands the error to the error handler. */
  sendError?: (reply: FastifyReply, request: FastifyRequest, error: AppError) => FastifyReply | undefined;
  /** The answer is the bare data, not the envelope (JWKS, which standard clients read). */
  bare?: boolean;
  /** `Cache-Control` of the answer; `no-store` when unset (plugins/security.ts). */
  cacheControl?: string;
  /**
   * The version of the answer for this caller (null: none to name). With one the answer carries an
   * `ETag`, a matching `If-None-Match` gets 304, and the serialized answer is kept (routes/versioned.ts).
   */
  version?: (input: RouteInput<Caller | null, S>) => Promise<string | null>;
  /**
   * A read a client may keep: `private, no-cache`, an ETag of the answer's content (or of its version),
   * 304 when the client holds it, gzip when accepted. Implied by `version`.
   */
  revalidate?: boolean;
}

/** A route anyone may call: the caller is null without a (valid) token. */
interface AnonymousRoute<D extends RpcDescriptor, S extends InputSchemas> extends RouteOptions<D, S> {
  access: "anonymous";
  /** Builds the RPC request from the HTTP request; may throw a validation AppError. */
  request: (input: RouteInput<Caller | null, S>) => RequestOf<D> | Promise<RequestOf<D>>;
}

/** A route for signed-in callers, or for some roles only: the caller is always set. */
interface SignedInRoute<D extends RpcDescriptor, S extends InputSchemas> extends RouteOptions<D, S> {
  access: Exclude<Access, "anonymous">;
  /** Builds the RPC request from the HTTP request (an upload's: once its parts are answered). */
  request: (input: RouteInput<Caller, S>) => RequestOf<D> | Promise<RequestOf<D>>;
}

/** One HTTP route of the interface, answered by one RPC: the whole gateway is a table of these. */
export type RpcRoute<D extends RpcDescriptor, S extends InputSchemas> =
  | AnonymousRoute<D, S>
  | SignedInRoute<D, S>;

/**
 * `$id`s are dropped from schemas embedded in routes: one shared schema object appears in many
 * routes, and a validator that sees the same `$id` twice refuses it. Parts set to `undefined` go too.
 */
export function inline<T extends object>(schema: T): T {
  return JSON.parse(JSON.stringify(schema, (key, value) => (key === "$id" ? undefined : value)));
}

/** The caller of a route that needs one; the auth hook has already answered 401 without it. */
function signedIn(caller: Caller | null): Caller {
  if (!caller) throw errors.unauthenticated(ErrorCode.TOKEN_MISSING, "Sign in first.");
  return caller;
}

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
  const status = route.status ?? 200;
  const versioned = route.version ? versionedAnswers() : null;
  const reads =
    route.method === "GET" && !route.bare && (route.revalidate === true || route.version !== undefined);
  const writes = [route.method].flat().some((method) => method !== "GET");
  const dataSchema = inline(route.response ?? route.rpc.response);
  const schema: RouteSchema<S> = {
    // Through JSON, which also leaves out the input parts the route does not have.
    ...inline({
      tags: [route.tag],
      summary: route.summary,
      ...(route.access === "anonymous" ? {} : { security: [{ bearer: [] }] }),
      params: route.input.params,
      querystring: route.input.querystring,
      body: route.input.body,
    }),
    // Checked when fastify serializes the answer; typed by the RPC's response, not here.
    response: {
      ...(route.statusOf
        ? { 200: openApiNullables(inline(route.bare ? dataSchema : ServiceResponse(dataSchema))) }
        : {}),
      [status]: openApiNullables(inline(route.bare ? dataSchema : ServiceResponse(dataSchema))),
      "4xx": ErrorEnvelope,
      "5xx": ErrorEnvelope,
    },
  };
  app.route({
    method: route.method,
    url: route.url,
    ...(route.bodyLimit ? { bodyLimit: route.bodyLimit } : {}),
    config: {
      access: route.access,
      ...(route.perMinute ? { rateLimit: { max: route.perMinute, timeWindow: 60_000 } } : {}),
      // A versioned answer may be kept by the client, which asks again with If-None-Match every time.
      ...(route.cacheControl || reads ? { cacheControl: route.cacheControl ?? "private, no-cache" } : {}),
    },
    schema,
    handler: async (request, reply) => {
      const input = {
        params: request.params,
        query: request.query,
        body: request.body,
        ip: request.ip,
        request,
      };
      const rpcRequest =
        route.access === "anonymous"
          ? await route.request({ ...input, caller: request.caller })
          : await route.request({ ...input, caller: signedIn(request.caller) });
      // After the input was checked: a version names only answers that can exist.
      const tag =
        versioned && route.version ? await route.version({ ...input, caller: request.caller }) : null;
      if (versioned && tag !== null) {
        if (await versioned.answer(tag, request, reply)) return reply;
      }
      // A write with an Idempotency-Key: its first answer again, or the key claimed for this one.
      const keyUse = writes ? await app.idempotency.use(request, reply, rpcRequest) : null;
      if (keyUse?.kind === "replayed") return reply;
      const claimed = keyUse?.kind === "claimed" ? keyUse : null;
      let result: ResponseOf<D>;
      let message: string | null;
      let replayed: true | undefined;
      try {
        let sent = rpcRequest;
        for (;;) {
          try {
            ({
              data: result,
              message,
              replayed,
            } = await bus.callWithMessage(route.rpc, sent, {
              requestId: request.id,
              idempotency: claimed?.requestKey,
            }));
            break;
          } catch (error) {
            const again = route.retry ? await route.retry(toAppError(error), sent, request) : null;
            if (!again) throw error;
            sent = again;
          }
        }
      } catch (error) {
        // The key is free for the retry: a failed write did nothing (writes are transactions), and one
        // whose reply was lost (503/504) is answered again by its service, which kept the answer with the
        // key. Redis down: the claim lapses by itself (CLAIM_MS), and the answer is this error, not Redis's.
        await claimed
          ?.release()
          .catch((err: unknown) => request.log.warn({ err }, "Idempotency-Key not released"));
        const appError = toAppError(error);
        const custom = route.sendError?.(reply.code(HTTP_STATUS_OF_KIND[appError.kind]), request, appError);
        if (custom) return custom;
        throw error;
      }
      if (route.headers) reply.headers(route.headers(result));
      const data = route.data ? await route.data(result, input) : result;
      const custom = route.send?.(reply, request, data);
      if (custom) return custom;
      const body = route.bare ? data : ok(data, message);
      if (versioned && tag !== null) {
        await versioned.keep(tag, request, reply.code(status), body);
        return reply;
      }
      // Every other read: an ETag of its content, 304 when the client holds it, gzip when accepted.
      if (reads) {
        await sendByContent(request, reply.code(status), body);
        return reply;
      }
      const answered = route.statusOf?.(result) ?? status;
      if (claimed) {
        const text = String(reply.code(answered).serialize(body));
        // The write is done: its answer goes out even when Redis cannot keep it (a retry then runs
        // again once the claim lapses, and finds what this one did).
        await claimed
          .settle(answered, text)
          .catch((err: unknown) => request.log.warn({ err }, "Idempotency-Key answer not kept"));
        // The service's kept first answer (the first reply was lost): a replay, as the gateway's own are.
        if (replayed) reply.header("idempotent-replayed", "true");
        return reply.type("application/json; charset=utf-8").send(text);
      }
      return reply.code(answered).send(body);
    },
  });
}
