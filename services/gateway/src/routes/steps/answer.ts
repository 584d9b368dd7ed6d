import type { Answer } from "@fundraise/bus";
import {
  HTTP_STATUS_OF_KIND,
  ok,
  type ResponseOf,
  type RpcDescriptor,
  toAppError,
} from "@fundraise/protocol";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { InputSchemas, ParsedInput, RpcRoute } from "../route.ts";
import { sendByContent, type versionedAnswers } from "../versioned.ts";
import { type ClaimedKey, sendKept } from "./idempotency.ts";

/**
 * Shape the answer of the RPC's result: the route's headers, its `data` (the result unless mapped), in
 * the envelope `{data, success, message}` unless `bare`. A route's own `send` (the verify-email page)
 * may send something else instead: then `sent` is its reply.
 */
export async function shapeAnswer<D extends RpcDescriptor, S extends InputSchemas>(
  route: RpcRoute<D, S>,
  answer: Answer<ResponseOf<D>>,
  input: ParsedInput<S>,
  reply: FastifyReply,
): Promise<{ sent: FastifyReply } | { body: unknown }> {
  const { headers, data: mapped, send, bare } = route.answer ?? {};
  if (headers) reply.headers(headers(answer.data));
  const data = mapped ? await mapped(answer.data, input) : answer.data;
  const sent = send?.(reply, input.request, data);
  if (sent) return { sent };
  return { body: bare ? data : ok(data, answer.message) };
}

/**
 * A failure is the answer: the route's own `sendError` (the verify-email page) sends it with the
 * error's status, or the error goes on to the error handler (plugins/error-handler.ts).
 */
export function answerFailure<D extends RpcDescriptor, S extends InputSchemas>(
  route: RpcRoute<D, S>,
  error: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  const appError = toAppError(error);
  const sent = route.answer?.sendError?.(reply.code(HTTP_STATUS_OF_KIND[appError.kind]), request, appError);
  if (sent) return sent;
  throw error;
}

/** How the answer goes out (routes/versioned.ts, plugins/idempotency.ts). */
export type Delivery =
  /** A versioned read: kept under its version for the next callers who get it. */
  | { kind: "versioned"; answers: ReturnType<typeof versionedAnswers>; version: string }
  /** Any other read a client may keep: an ETag of its content, 304 when the client holds it. */
  | { kind: "by-content" }
  /** A write with a claimed Idempotency-Key: kept with the key. */
  | { kind: "kept"; claimed: ClaimedKey }
  /** As it is. */
  | { kind: "plain" };

/**
 * Send the answer. Reads answer `answer.status`; writes the status of the result (`statusOf`) when the
 * route has one.
 */
export async function sendAnswer<D extends RpcDescriptor, S extends InputSchemas>(
  route: RpcRoute<D, S>,
  delivery: Delivery,
  answer: Answer<ResponseOf<D>>,
  body: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const status = route.answer?.status ?? 200;
  switch (delivery.kind) {
    case "versioned":
      await delivery.answers.keep(delivery.version, request, reply.code(status), body);
      return reply;
    case "by-content":
      await sendByContent(request, reply.code(status), body);
      return reply;
    default: {
      const answered = route.answer?.statusOf?.(answer.data) ?? status;
      if (delivery.kind === "kept") {
        return sendKept(delivery.claimed, request, reply, {
          status: answered,
          body,
          replayed: answer.replayed === true,
        });
      }
      return reply.code(answered).send(body);
    }
  }
}
