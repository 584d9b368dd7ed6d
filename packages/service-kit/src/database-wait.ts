import { backoffWithJitter } from "@fundraise/bus";
import pg from "pg";
import type { Logger } from "./logger.ts";
import { waitingLog } from "./waiting.ts";

// Apart from waiting.ts, which the gateway uses too: a module that imports pg only where a database is.

/**
 * Resolves once the database at `url` answers a query; until then tries again with a growing delay (up
 * to `maxDelayMs`), as long as it takes, logging one line per burst. Rejects only when `signal` aborts
 * (the process stops while it waits).
 */
export async function waitForDatabase(
  url: string,
  options: { log: Logger; signal?: AbortSignal; maxDelayMs?: number },
): Promise<void> {
  const waiting = waitingLog({ log: options.log, what: "the database", url });
  try {
    for (let attempt = 0; ; attempt++) {
      options.signal?.throwIfAborted();
      // A black-holed host must not hold an attempt for the OS's TCP timeout.
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
      client.on("error", () => undefined);
      try {
        await client.connect();
        await client.query("select 1");
        waiting.connected();
        return;
      } catch (error) {
        waiting.failed(error);
      } finally {
        await client.end().catch(() => undefined);
      }
      await sleep(backoffWithJitter(attempt, 100, options.maxDelayMs ?? 5_000), options.signal);
    }
  } finally {
    waiting.abandon();
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener("abort", aborted);
      resolve();
    }
    function aborted() {
      clearTimeout(timer);
      reject(signal?.reason);
    }
    signal?.addEventListener("abort", aborted, { once: true });
  });
}
