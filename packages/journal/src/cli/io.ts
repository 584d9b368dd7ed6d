import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Where a CLI of this package writes and what it reads of its environment: the process's, or a test's. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** The environment (AMQP_URL, test hooks); the process's when absent. */
  env?: NodeJS.ProcessEnv;
  /** Aborts a read that would go on (`--follow`). */
  signal?: AbortSignal;
}

/** The process's streams and environment. */
export function processIo(signal?: AbortSignal): Io {
  return {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    env: process.env,
    ...(signal ? { signal } : {}),
  };
}

/** True when `moduleUrl` is the script the process runs (a CLI run as a program, not imported by a test). */
export function isEntryPoint(moduleUrl: string): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}
