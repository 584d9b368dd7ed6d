import { isAppError, isErrorKind, toAppError } from "@fundraise/protocol";
import type { Channel, ChannelModel } from "amqplib";

/**
 * What the bus tells a metrics registry, without depending on one: service-kit's metrics module implements
 * it (prom-client). Every hook is optional and must not throw.
 *
 * `route` is the RPC name and `outcome` is `ok` or the error kind of the answer (`validation`, `not_found`,
 * `unavailable`, `timeout`, `internal`, …): both come from closed sets, so the label sets stay bounded.
 */
export interface BusMetrics {
  /** A call this process made, from `call` to its answer or failure (the caller's side). */
  rpcClient?(route: string, outcome: string, seconds: number): void;
  /** A request this process's handler ran, from the handler's start to its answer (the server's side). */
  rpcServer?(route: string, outcome: string, seconds: number): void;
}

/** `ok`, or the kind of the error (an error that is no AppError counts as `internal`). */
export function outcomeOf(error: unknown): string {
  if (error === undefined) return "ok";
  const kind = isAppError(error) ? error.kind : toAppError(error).kind;
  return isErrorKind(kind) ? kind : "internal";
}

/**
 * Times a call: reports its route, outcome and duration to `hook`, and passes the result on. A failure is
 * passed on as `translate` makes it (the server's error translation, run here once instead of after).
 */
export function timed<T>(
  hook: ((route: string, outcome: string, seconds: number) => void) | undefined,
  route: string,
  run: () => Promise<T>,
  translate: (error: unknown) => unknown = (error) => error,
): Promise<T> {
  if (!hook) return run();
  const started = process.hrtime.bigint();
  const report = (outcome: string) => {
    try {
      hook(route, outcome, Number(process.hrtime.bigint() - started) / 1e9);
    } catch {
      // A metric never fails the call it measures.
    }
  };
  const failed = (error: unknown): never => {
    const translated = translate(error);
    report(outcomeOf(translated));
    throw translated;
  };
  let promise: Promise<T>;
  try {
    promise = run();
  } catch (error) {
    promise = Promise.reject(error);
  }
  return promise.then((value) => {
    report("ok");
    return value;
  }, failed);
}

/** A queue as the broker reports it; `null` counts when the queue does not exist or did not answer in time. */
export interface QueueStat {
  queue: string;
  messages: number | null;
  consumers: number | null;
}

/**
 * Asks the broker for each queue's depth and consumer count (passive `checkQueue`), on one short-lived
 * channel, within `timeoutMs` overall: a queue the broker does not know closes the channel (404), so the
 * next one gets a new channel; what did not answer in time is reported as unknown (`null`), never waited for.
 */
export async function inspectQueues(
  connection: ChannelModel | undefined,
  queues: readonly string[],
  timeoutMs: number,
): Promise<QueueStat[]> {
  const stats: QueueStat[] = queues.map((queue) => ({ queue, messages: null, consumers: null }));
  if (!connection || stats.length === 0) return stats;
  let stopped = false;
  const timer = new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref());
  const work = (async () => {
    let channel: Channel | undefined;
    for (const stat of stats) {
      if (stopped) break;
      try {
        channel ??= await openQuietly(connection);
        const ok = await channel.checkQueue(stat.queue);
        stat.messages = ok.messageCount;
        stat.consumers = ok.consumerCount;
      } catch {
        // The channel is closed by the broker's 404 (or was lost): the next queue opens another.
        channel = undefined;
      }
    }
    await channel?.close().catch(() => undefined);
  })();
  await Promise.race([work, timer]);
  stopped = true;
  // What answered in time; later answers do not change what was reported.
  return stats.map((stat) => ({ ...stat }));
}

async function openQuietly(connection: ChannelModel): Promise<Channel> {
  const channel = await connection.createChannel();
  // A passive check of a missing queue closes the channel with an error: expected, not worth a crash.
  channel.on("error", () => undefined);
  return channel;
}
