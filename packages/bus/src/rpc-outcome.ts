import type { RpcDescriptor } from "@fundraise/protocol";
import { type AppError, ErrorCode, errors, isAppError, toAppError, validatorOf } from "@fundraise/protocol";
import type { Logger } from "pino";
import { WithMessage } from "./bus.ts";
import { type ReplyParts, successReply } from "./headers.ts";

/** A handler's answer as the server replies it: its data and note, checked against the response schema. */
export function successOf(descriptor: RpcDescriptor, answer: unknown, log: Logger): ReplyParts {
  const [response, note] = answer instanceof WithMessage ? [answer.data, answer.message] : [answer, null];
  const check = validatorOf(descriptor.response);
  if (!check.check(response)) {
    log.error({ issues: check.issues(response) }, "RPC handler returned an invalid response");
    throw errors.internal(ErrorCode.INTERNAL, "An unexpected error occurred.");
  }
  return successReply(response, note);
}

/**
 * A handler's failure as the server replies it: an AppError as it is, anything else through
 * `translateError`; logged once, as an error when it was unexpected.
 */
export function failureOf(
  thrown: unknown,
  translateError: (error: unknown) => unknown,
  log: Logger,
): AppError {
  const error = isAppError(thrown) ? thrown : translateError(thrown);
  const appError = toAppError(error);
  if (!isAppError(error)) log.error({ err: error }, "RPC handler failed");
  else if (appError.kind === "internal" && appError.cause !== undefined) {
    log.error({ err: appError }, "RPC handler failed");
  } else log.debug({ kind: appError.kind, code: appError.code }, "RPC answered with an error");
  return appError;
}
