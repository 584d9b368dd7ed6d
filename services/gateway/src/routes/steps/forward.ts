import type { Answer, Bus, RequestKey } from "@fundraise/bus";
import { type RequestOf, type ResponseOf, type RpcDescriptor, toAppError } from "@fundraise/protocol";
import type { FastifyRequest } from "fastify";
import type { Retry } from "../route.ts";

/**
 * Forward the RPC: the request goes to the service that owns the answer, with the HTTP request's id
 * and, on a write that claimed one, its Idempotency-Key. A failure the route's `retry` can mend sends
 * the request it makes again; any other failure is thrown, as the service answered it.
 */
export async function forward<D extends RpcDescriptor>(
  bus: Bus,
  route: { rpc: D; retry?: Retry<D> | undefined },
  rpcRequest: RequestOf<D>,
  request: FastifyRequest,
  idempotency: RequestKey | undefined,
): Promise<Answer<ResponseOf<D>>> {
  let sent = rpcRequest;
  for (;;) {
    try {
      return await bus.callWithMessage(route.rpc, sent, { requestId: request.id, idempotency });
    } catch (error) {
      const again = route.retry ? await route.retry(toAppError(error), sent, request) : null;
      if (!again) throw error;
      sent = again;
    }
  }
}
