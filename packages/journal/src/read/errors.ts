/**
 * What the replay CLI tells apart by exit code: a bad option value (2, with the usage hint) and anything
 * that stops a read that was asked for correctly (1). Each message is one line, naming the problem.
 */

/** An option value that cannot be used; some are only found bad against the journal (a position past its end). */
export class BadOptionError extends Error {
  readonly exitCode = 2;
}

/** The broker, the vhost or the journal is not there, or nothing matched a story. */
export class ReplayError extends Error {
  readonly exitCode = 1;
}

/** A failed AMQP operation's reply code (404 for a missing queue), when it has one. */
export function amqpCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "number" ? code : undefined;
}
