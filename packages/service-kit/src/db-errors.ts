import { ErrorCode, errors } from "@fundraise/protocol";
import { ConnectionException, UniqueConstraintViolationException } from "@mikro-orm/core";

/**
 * Database failures as platform errors, translated at the repository edge: a unique violation is the
 * caller's conflict, a lost connection is a dependency that is unavailable (retryable).
 */
export function translateDbError(error: unknown, conflict?: { code: string; message: string }): unknown {
  if (error instanceof UniqueConstraintViolationException && conflict) {
    return errors.conflict(conflict.code, conflict.message, { cause: error });
  }
  if (error instanceof ConnectionException) {
    return errors.unavailable(ErrorCode.DB_UNAVAILABLE, "The database is unavailable.", { cause: error });
  }
  return error;
}
