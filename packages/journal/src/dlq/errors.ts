/**
 * A problem with what the operator asked for (a queue that does not exist, a bad option): the CLI
 * answers it with one line and exit code 2, where a broker or network failure is exit code 1.
 */
export class InputError extends Error {
  override name = "InputError";
}
