import type { Bus } from "@fundraise/bus";
import {
  type AppError,
  type Caller,
  HTTP_STATUS_OF_KIND,
  ok,
  type RequestOf,
  type ResponseOf,
  type RpcDescriptor,
  ServiceResponse,
  toAppError,
} from "@fundraise/protocol";
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from "fastify";
import Type, { type Static, type TSchema } from "typebox";
import type { Access } from "../plugins/auth.ts";

export const ErrorEnvelope = Type.Object({
  data: Type.Null(),
  success: Type.Literal(false),
  message: Type.String(),
});

export interface RouteInput<A extends Access, P, Q, B> {
  params: P;
  query: Q;
  body: B;
  /** Set from a verified token; never null on routes that need a signed-in caller. */
  caller: A extends "anonymous" ? Caller | null : Caller;
  ip: string;
  request: FastifyRequest;
}

/** One HTTP route of the interface, answered by one RPC: the whole gateway is a table of these. */
export interface RpcRoute<
  D extends RpcDescriptor,
  A extends Access,
  P extends TSchema,
  Q extends TSchema,
  B extends TSchema,
> {
  method: HTTPMethods | HTTPMethods[];
  url: string;
  tag: string;
  summary: string;
  access: A;
  params?: P;
  querystring?: Q;
  body?: B;
  rpc: D;
  /** Builds the RPC request from the HTTP request; may throw a validation AppError. */
  request: (input: RouteInput<A, Static<P>, Static<Q>, Static<B>>) => RequestOf<D>;
  /** The HTTP `data` schema when it differs from the RPC's response. */
  response?: TSchema;
  data?: (result: ResponseOf<D>) => unknown;
  status?: 200 | 201;
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
}

/**
 * `$id`s are dropped from schemas embedded in routes: one shared schema object appears in many
 * routes, and a validator that sees the same `$id` twice refuses it.
 */
export function inline<T extends TSchema>(schema: T): T {
  return JSON.parse(JSON.stringify(schema, (key, value) => (key === "$id" ? undefined : value))) as T;
}

export function registerRpcRoute<
  D extends RpcDescriptor,
  A extends Access,
  P extends TSchema,
  Q extends TSchema,
  B extends TSchema,
>(app: FastifyInstance, bus: Bus, route: RpcRoute<D, A, P, Q, B>): void {
  const status = route.status ?? 200;
  const dataSchema = inline(route.response ?? route.rpc.response);
  app.route({
    method: route.method,
    url: route.url,
    ...(route.bodyLimit ? { bodyLimit: route.bodyLimit } : {}),
    config: {
      access: route.access,
      ...(route.perMinute ? { rateLimit: { max: route.perMinute, timeWindow: 60_000 } } : {}),
      ...(route.cacheControl ? { cacheControl: route.cacheControl } : {}),
    },
    schema: {
      tags: [route.tag],
      summary: route.summary,
      ...(route.access === "anonymous" ? {} : { security: [{ bearer: [] }] }),
      ...(route.params ? { params: inline(route.params) } : {}),
      ...(route.querystring ? { querystring: inline(route.querystring) } : {}),
      ...(route.body ? { body: inline(route.body) } : {}),
      response: {
        [status]: route.bare ? dataSchema : ServiceResponse(dataSchema),
        "4xx": ErrorEnvelope,
        "5xx": ErrorEnvelope,
      },
    },
    handler: async (request, reply) => {
      const rpcRequest = route.request({
        params: request.params as Static<P>,
        query: request.query as Static<Q>,
        body: request.body as Static<B>,
        caller: request.caller as RouteInput<A, unknown, unknown, unknown>["caller"],
        ip: request.ip,
        request,
      });
      let result: ResponseOf<D>;
      let message: string | null;
      try {
        ({ data: result, message } = await bus.callWithMessage(route.rpc, rpcRequest, {
          requestId: request.id,
        }));
      } catch (error) {
        const appError = toAppError(error);
        const custom = route.sendError?.(reply.code(HTTP_STATUS_OF_KIND[appError.kind]), request, appError);
        if (custom) return custom;
        throw error;
      }
      const data = route.data ? route.data(result) : result;
      const custom = route.send?.(reply, request, data);
      if (custom) return custom;
      return reply.code(status).send(route.bare ? data : ok(data, message));
    },
  });
}
