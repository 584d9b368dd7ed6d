import { ErrorCode, errors, isAppError } from "@fundraise/protocol";
import { ConnectionException, UniqueConstraintViolationException } from "@mikro-orm/core";
import { processMetrics } from "./metrics.ts";

/**
 * Database failures as platform errors, translated at the repository edge: a unique violation is the
 * caller's conflict, a lost connection is a dependency that is unavailable (retryable).
 */
export function translateDbError(error: unknown, conflict?: { code: string; message: string }): unknown {
  if (error instanceof UniqueConstraintViolationException && conflict) {
    return errors.conflict(conflict.code, conflict.message, { cause: error });
  }
  // Counted once, where the driver's error is first translated (an AppError was counted when it was made).
  const fresh = !isAppError(error);
  if (error instanceof ConnectionException || isConnectionLoss(error)) {
    if (fresh) processMetrics().dbError("connection");
    return errors.unavailable(ErrorCode.DB_UNAVAILABLE, "The database is unavailable.", { cause: error });
  }
  if (hasSqlState(error, /^(40001|40P01|55P03)$/)) {
    if (fresh) processMetrics().dbError("contention");
    // A deadlock, a serialization failure or a lock not had in time: this write gave way; it may be repeated.
    return errors.unavailable(
      ErrorCode.DB_UNAVAILABLE,
      "The write met a concurrent one and was not applied; try again.",
      { cause: error },
    );
  }
  return error;
}

/** Whether the error, or one of its causes, carries a SQLSTATE matching `state`. */
function hasSqlState(error: unknown, state: RegExp): boolean {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 8; depth++) {
    if (typeof e.code === "string" && state.test(e.code)) return true;
    e = e.cause as typeof e;
  }
  return false;
}

/**
 * Whether a failure is a unique violation (of `constraint`, when given), also once translated: the
 * conflict `translateDbError` makes keeps the violation as its cause. A use case that runs again on it
 * (another writer inserted the same thing first) finds what that writer committed.
 */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    if (e instanceof UniqueConstraintViolationException) {
      return constraint === undefined || (e as { constraint?: unknown }).constraint === constraint;
    }
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * A Postgres error that says the connection or the server went away, not that the statement was wrong:
 * class 08 (connection exception), class 57 (operator intervention: a terminated backend, a shutdown,
 * a server starting up) and class 53 (insufficient resources, e.g. too many connections). A driver error
 * of a closed socket has no SQLSTATE but says so, as does a statement sent on a client whose connection
 * broke a moment before (pg's "not queryable").
 */
function isConnectionLoss(error: unknown): boolean {
  for (let e = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined; e; ) {
    if (typeof e.code === "string" && /^(08|57|53)[0-9A-Z]{3}$/.test(e.code)) return true;
    if (
      typeof e.message === "string" &&
      /Connection terminated|connection (is )?closed|terminating connection|connection error and is not queryable/i.test(
        e.message,
      )
    ) {
      return true;
    }
    e = e.cause as typeof e;
  }
  return false;
}
