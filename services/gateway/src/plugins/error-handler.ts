import { type AppError, ErrorCode, errors, fail, HTTP_STATUS_OF_KIND, isAppError } from "@fundraise/protocol";
import type { FastifyError, FastifyReply } from "fastify";
import type { Server } from "../server.ts";

/**
 * The only place where an error becomes an HTTP status. Every answer is the envelope; the error code
 * travels in `x-error-code`. Anything the client sent gets a 4xx; only our own bugs are a 500, and
 * their text never leaves the process.
 */
export function registerErrorHandling(app: Server): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const appError = toHttpError(error);
    if (appError.kind === "internal") {
      request.log.error({ err: error }, "request failed");
    } else if (appError.kind === "unavailable" || appError.kind === "timeout") {
      // Expected when a service is down or slow: the code says which; no stack needed.
      request.log.warn(
        { kind: appError.kind, code: appError.code, reason: appError.message },
        "dependency failed",
      );
    }
    return send(reply, appError);
  });

  app.setNotFoundHandler((request, reply) =>
    send(
      reply,
      errors.notFound(ErrorCode.ROUTE_NOT_FOUND, `No route ${request.method} ${request.url.split("?")[0]}.`),
    ),
  );
}

export function send(reply: FastifyReply, error: AppError): FastifyReply {
  return sendStatus(reply, HTTP_STATUS_OF_KIND[error.kind], error.code, error.message);
}

/** The envelope with a status no error kind has (414, 431): framework and transport errors. */
export function sendStatus(reply: FastifyReply, status: number, code: string, message: string): FastifyReply {
  return reply
    .code(status)
    .header("x-error-code", code)
    .header("cache-control", "no-store")
    .type("application/json; charset=utf-8")
    .send(fail(message));
}

function toHttpError(error: FastifyError): AppError {
  if (isAppError(error)) return error;
  if (error.validation) {
    const where = error.validationContext ?? "request";
    const issues = error.validation
      .slice(0, 10)
      .map((v) => `${v.instancePath || "/"} ${v.message ?? "is invalid"}`)
      .join("; ");
    return errors.validation(ErrorCode.VALIDATION_FAILED, `Invalid ${where}: ${issues}`, { cause: error });
  }
  switch (error.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return errors.payloadTooLarge(ErrorCode.PAYLOAD_TOO_LARGE, "The request body is too large.", {
        cause: error,
      });
    case "FST_ERR_CTP_INVALID_JSON_BODY":
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return errors.validation(ErrorCode.MALFORMED_JSON, "The request body is not valid JSON.", {
        cause: error,
      });
    default:
      break;
  }
  if (error instanceof SyntaxError) {
    return errors.validation(ErrorCode.MALFORMED_JSON, "The request body is not valid JSON.", {
      cause: error,
    });
  }
  const status = error.statusCode ?? 500;
  if (status === 413) {
    return errors.payloadTooLarge(ErrorCode.PAYLOAD_TOO_LARGE, "The request body is too large.", {
      cause: error,
    });
  }
  if (status >= 400 && status < 500) {
    // Fastify's own client errors (bad content type, bad header, ...) keep their message.
    return errors.validation(error.code ?? ErrorCode.VALIDATION_FAILED, error.message, { cause: error });
  }
  return errors.internal(ErrorCode.INTERNAL, "An unexpected error occurred.", { cause: error });
}
