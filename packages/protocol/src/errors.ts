/**
 * The one error model of the platform. A kind fixes the HTTP status and whether a consumer retries;
 * a code names the precise case for clients and logs. Errors are thrown anywhere and translated in
 * exactly two places: the bus (to and from a reply) and the gateway (to an HTTP status).
 */

/**
 * Kinds that are a final answer about the message itself (wrong, refused, already done): another try
 * gives the same answer. Consumers dead-letter these at once and retry everything else.
 */
const FINAL = [
  "validation",
  "unauthenticated",
  "forbidden",
  "not_found",
  "conflict",
  "gone",
  "payload_too_large",
  "unprocessable",
] as const;

export const ERROR_KINDS = [...FINAL, "rate_limited", "unavailable", "timeout", "internal"] as const;
export type ErrorKind = (typeof ERROR_KINDS)[number];

/** HTTP status per kind. A Record, so a new kind fails type-checking until it has a status. */
export const HTTP_STATUS_OF_KIND: Record<ErrorKind, number> = {
  validation: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  gone: 410,
  payload_too_large: 413,
  unprocessable: 422,
  rate_limited: 429,
  unavailable: 503,
  timeout: 504,
  internal: 500,
};

/** Kinds worth another try later: the failure is in a dependency, not in the message. */
const RETRYABLE: ReadonlySet<ErrorKind> = new Set(["unavailable", "timeout"]);

/** The final kinds (above): dead-lettered at once. */
export const FINAL_KINDS: ReadonlySet<ErrorKind> = new Set(FINAL);

export function isErrorKind(value: unknown): value is ErrorKind {
  return typeof value === "string" && (ERROR_KINDS as readonly string[]).includes(value);
}

// A brand instead of instanceof: two copies of this package (or a rehydrated error) still match.
const BRAND = Symbol.for("fundraise.AppError");

export interface AppErrorOptions {
  /** The original failure; kept for logs, never serialized to clients. */
  cause?: unknown;
  /** Client-safe structured details (validation issues, the clashing field, ...). */
  details?: unknown;
}

export class AppError extends Error {
  readonly [BRAND] = true;
  readonly kind: ErrorKind;
  readonly code: string;
  readonly details: unknown;

  constructor(kind: ErrorKind, code: string, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "AppError";
    this.kind = kind;
    this.code = code;
    this.details = options.details;
  }

  get status(): number {
    return HTTP_STATUS_OF_KIND[this.kind];
  }

  get retryable(): boolean {
    return RETRYABLE.has(this.kind);
  }
}

export function isAppError(error: unknown): error is AppError {
  return typeof error === "object" && error !== null && (error as Record<symbol, unknown>)[BRAND] === true;
}

type Factory = (code: string, message: string, options?: AppErrorOptions) => AppError;
const factory =
  (kind: ErrorKind): Factory =>
  (code, message, options) =>
    new AppError(kind, code, message, options);

/** Short constructors, one per kind: `throw errors.notFound(ErrorCode.PROJECT_NOT_FOUND, "...")`. */
export const errors = {
  validation: factory("validation"),
  unauthenticated: factory("unauthenticated"),
  forbidden: factory("forbidden"),
  notFound: factory("not_found"),
  conflict: factory("conflict"),
  gone: factory("gone"),
  payloadTooLarge: factory("payload_too_large"),
  unprocessable: factory("unprocessable"),
  rateLimited: factory("rate_limited"),
  unavailable: factory("unavailable"),
  timeout: factory("timeout"),
  internal: factory("internal"),
} as const;

/** Anything thrown, as an AppError: unknown errors become `internal` with a generic, client-safe message. */
export function toAppError(error: unknown): AppError {
  if (isAppError(error)) return error;
  return new AppError("internal", "INTERNAL", "An unexpected error occurred.", { cause: error });
}
