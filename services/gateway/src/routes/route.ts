import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { AppError, Caller, RequestOf, ResponseOf, RpcDescriptor } from "@fundraise/protocol";
import type {
  FastifyReply,
  FastifyRequest,
  FastifySchema,
  HTTPMethods,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
} from "fastify";
import type { TSchema } from "typebox";
import type { Access } from "../plugins/auth.ts";
import type { Server } from "../server.ts";

/**
 * What one route of the interface says: the gateway is a table of these (routes/*.ts), and
 * routes/define.ts is what is done with one. The options come in groups, in the order a request meets
 * them: the route itself, who may call it, what comes in, the RPC it asks, what goes out.
 */

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
export type RouteSchema<S extends InputSchemas> = FastifySchema & {
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

/** The parsed and validated input, without its caller (the answer's `data` mapping reads it). */
export type ParsedInput<S extends InputSchemas> = Omit<RouteInput<Caller | null, S>, "caller">;

/** How the body arrives, when not as the server takes bodies. */
export interface BodyOptions {
  /** The most bytes it may have, when not the server's (`BODY_LIMIT_BYTES`). */
  limit?: number;
  /**
   * Reads the body instead of fastify's JSON parser. The route gets an encapsulated context of its own,
   * which `reader` sets up (a content-type parser, hooks, request decorations) before the route is added
   * to it. The upload routes: the hex decoded and added to IPFS while the body arrives (uploads/plugin.ts).
   */
  reader?: (context: Server) => void;
}

/**
 * The request to send again after the RPC failed, when the route can mend the failure (an upload whose
 * content was released meanwhile pins it again: uploads/released.ts); null: the failure is the answer.
 */
export type Retry<D extends RpcDescriptor> = (
  error: AppError,
  sent: RequestOf<D>,
  request: FastifyRequest,
) => Promise<RequestOf<D> | null>;

/** What goes out, made of the RPC's result: by default the result in the envelope, 200. */
export interface AnswerOptions<D extends RpcDescriptor, S extends InputSchemas> {
  status?: 200 | 201;
  /** The status from the result, when it is not always `status` (both are in the document). */
  statusOf?: (result: ResponseOf<D>) => 200 | 201;
  /** The HTTP `data` schema when it differs from the RPC's response. */
  schema?: TSchema;
  /** The HTTP `data` made of the RPC's result (it may read more, e.g. files from IPFS for withHex). */
  data?: (result: ResponseOf<D>, input: ParsedInput<S>) => unknown;
  /** Response headers taken from the RPC's result (what the `data` mapping leaves out of the body). */
  headers?: (result: ResponseOf<D>) => Record<string, string>;
  /** The answer is the bare data, not the envelope (JWKS, which standard clients read). */
  bare?: boolean;
  /** Replaces the JSON envelope (the verify-email page for browsers); undefined keeps it. */
  send?: (reply: FastifyReply, request: FastifyRequest, data: unknown) => FastifyReply | undefined;
  /** The same for failures; undefined hands the error to the error handler. */
  sendError?: (reply: FastifyReply, request: FastifyRequest, error: AppError) => FastifyReply | undefined;
}

/** How a client may keep the answer: not at all (`no-store`, plugins/security.ts) unless set. */
export interface CacheOptions<S extends InputSchemas> {
  /** `Cache-Control` of the answer. */
  control?: string;
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

interface RouteOptions<D extends RpcDescriptor, S extends InputSchemas> {
  // The route, and how the OpenAPI document shows it.
  method: HTTPMethods | HTTPMethods[];
  url: string;
  tag: string;
  summary: string;
  // What comes in.
  /** Path, query and body schemas (`{}` when the route takes none): they validate and type the input. */
  input: S;
  body?: BodyOptions;
  /** Requests per minute per IP for this route, when stricter than the global limit. */
  perMinute?: number;
  // What it asks.
  rpc: D;
  retry?: Retry<D>;
  // What goes out.
  answer?: AnswerOptions<D, S>;
  cache?: CacheOptions<S>;
}

/** A route anyone may call: the caller is null without a (valid) token. */
export interface AnonymousRoute<D extends RpcDescriptor, S extends InputSchemas> extends RouteOptions<D, S> {
  access: "anonymous";
  /** Builds the RPC request from the HTTP request; may throw a validation AppError. */
  request: (input: RouteInput<Caller | null, S>) => RequestOf<D> | Promise<RequestOf<D>>;
}

/** A route for signed-in callers, or for some roles only: the caller is always set. */
export interface SignedInRoute<D extends RpcDescriptor, S extends InputSchemas> extends RouteOptions<D, S> {
  access: Exclude<Access, "anonymous">;
  /** Builds the RPC request from the HTTP request (an upload's: once its parts are answered). */
  request: (input: RouteInput<Caller, S>) => RequestOf<D> | Promise<RequestOf<D>>;
}

/** One HTTP route of the interface, answered by one RPC. */
export type RpcRoute<D extends RpcDescriptor, S extends InputSchemas> =
  | AnonymousRoute<D, S>
  | SignedInRoute<D, S>;
