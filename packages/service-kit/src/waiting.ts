import { createWaitingLog, redactUrl, type WaitingLog, type WaitingLogOptions } from "@fundraise/bus";
import type { Logger } from "./logger.ts";

/**
 * A process waits for a server it needs (the broker, the database, Redis) instead of failing: an
 * orchestrator's readiness probe shows it is not ready meanwhile, and it logs one line per burst of
 * attempts (`createWaitingLog` in the bus), never one per attempt.
 */

/** What this process waits for right now, and how many of its clients wait for it. */
const waits = new Map<string, number>();

/** What this process waits for right now ("the database", "Redis"), for readiness details. */
export function waitingFor(): string[] {
  return [...waits.keys()];
}

/** `createWaitingLog`, counted in `waitingFor()` while it waits. */
export function waitingLog(options: Omit<WaitingLogOptions, "onWaiting">): WaitingLog {
  return createWaitingLog({
    ...options,
    onWaiting: (waiting) => {
      const count = (waits.get(options.what) ?? 0) + (waiting ? 1 : -1);
      if (count > 0) waits.set(options.what, count);
      else waits.delete(options.what);
    },
  });
}

/** The events of an ioredis client this needs (service-kit does not depend on ioredis). */
export interface RedisEvents {
  on(event: "error", listener: (error: Error) => void): unknown;
  on(event: "ready" | "reconnecting", listener: () => void): unknown;
}

/**
 * Logs a Redis client's connection as a waiting process should: ioredis retries by itself and emits an
 * `error` per failed attempt (every 2 s at most); this turns them into one line per burst, one line when
 * a live connection is lost, and one when it is back. Register it instead of an `error` listener of
 * your own (without any, ioredis would print each error).
 */
export function watchRedis(redis: RedisEvents, options: { log: Logger; url: string }): void {
  const waiting = waitingLog({ log: options.log, what: "Redis", url: options.url });
  let ready = false;
  redis.on("error", (error) => waiting.failed(error));
  redis.on("ready", () => {
    ready = true;
    waiting.connected();
  });
  // ioredis emits `reconnecting` only when it will try again: not after quit() or disconnect().
  redis.on("reconnecting", () => {
    if (!ready) return;
    ready = false;
    options.log.warn({ url: redactUrl(options.url) }, "lost the Redis connection; reconnecting");
  });
}
