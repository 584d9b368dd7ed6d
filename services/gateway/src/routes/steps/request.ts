import { type Caller, ErrorCode, errors, type RequestOf, type RpcDescriptor } from "@fundraise/protocol";
import type { FastifyRequest } from "fastify";
import type { InputSchemas, ParsedInput, RpcRoute } from "../route.ts";

/** The validated input of a request, as the route's functions read it (the caller comes with each step). */
export function inputOf<S extends InputSchemas>(request: FastifyRequest): ParsedInput<S> {
  return {
    params: request.params as ParsedInput<S>["params"],
    query: request.query as ParsedInput<S>["query"],
    body: request.body as ParsedInput<S>["body"],
    ip: request.ip,
    request,
  };
}

/** The caller of a route that needs one; the auth hook has already answered 401 without it. */
function signedIn(caller: Caller | null): Caller {
  if (!caller) throw errors.unauthenticated(ErrorCode.TOKEN_MISSING, "Sign in first.");
  return caller;
}

/**
 * Build the RPC request: the route's `request` of the input, with the caller its access admits (null
 * on an anonymous route without a valid token). It may throw a validation error: the RPC is not sent.
 */
export function buildRequest<D extends RpcDescriptor, S extends InputSchemas>(
  route: RpcRoute<D, S>,
  input: ParsedInput<S>,
  caller: Caller | null,
): RequestOf<D> | Promise<RequestOf<D>> {
  return route.access === "anonymous"
    ? route.request({ ...input, caller })
    : route.request({ ...input, caller: signedIn(caller) });
}

/**
 * The version of the answer this caller gets (`cache.version`), null when none names it. Asked after the
 * RPC request was built: a version names only answers that can exist.
 */
export async function versionOf<D extends RpcDescriptor, S extends InputSchemas>(
  route: RpcRoute<D, S>,
  input: ParsedInput<S>,
  caller: Caller | null,
): Promise<string | null> {
  const version = route.cache?.version;
  return version ? version({ ...input, caller }) : null;
}
