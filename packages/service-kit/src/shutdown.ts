import type { Logger } from "pino";
import { stopTelemetry } from "./telemetry-env.ts";

export interface Shutdown {
  /** Registers a close step; steps run in reverse order of registration (last opened, first closed). */
  add(name: string, close: () => Promise<void> | void): void;
  /** Runs every step once, each bounded by the grace period; later calls return the same promise. */
  run(reason: string): Promise<void>;
  readonly signal: AbortSignal;
}

/** What a service's app registers its resources with (closed last opened, first closed). */
export type Closers = Pick<Shutdown, "add">;

export function createShutdown(log: Logger, graceMs = 10_000): Shutdown {
  const steps: { name: string; close: () => Promise<void> | void }[] = [];
  const controller = new AbortController();
  let running: Promise<void> | undefined;

  return {
    signal: controller.signal,
    add(name, close) {
      steps.push({ name, close });
    },
    run(reason) {
      running ??= (async () => {
        controller.abort(reason);
        log.info({ reason }, "shutting down");
        for (const step of [...steps].reverse()) {
          let timer: NodeJS.Timeout | undefined;
          const timeout = new Promise<"timeout">((resolve) => {
            timer = setTimeout(() => resolve("timeout"), graceMs);
          });
          try {
            const result = await Promise.race([
              Promise.resolve(step.close()).then(() => "ok" as const),
              timeout,
            ]);
            if (result === "timeout") log.warn({ step: step.name, graceMs }, "close step timed out");
          } catch (err) {
            log.error({ err, step: step.name }, "close step failed");
          } finally {
            clearTimeout(timer);
          }
        }
        log.info("stopped");
      })();
      return running;
    },
  };
}

/**
 * The process edge: SIGINT/SIGTERM run the shutdown and exit; a second signal exits at once.
 * Only main.ts calls this; tests drive `Shutdown.run` directly.
 */
export function exitOnSignals(shutdown: Shutdown, log: Logger): void {
  let signalled = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) process.exit(130);
    signalled = true;
    shutdown.run(signal).then(
      () => exitAfterTelemetry(log, 0),
      () => exitAfterTelemetry(log, 1),
    );
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  process.on("unhandledRejection", (reason) => {
    log.error({ err: reason }, "unhandled rejection");
  });
}

/** Bounds the export of the spans still buffered (tracing on only) before the process exits. */
const TELEMETRY_FLUSH_MS = 3_000;

async function exitAfterTelemetry(log: Logger, code: number): Promise<never> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, TELEMETRY_FLUSH_MS);
  });
  await Promise.race([
    stopTelemetry().then((err) => {
      if (err !== undefined) log.warn({ err }, "spans not exported at exit");
    }),
    timeout,
  ]);
  clearTimeout(timer);
  process.exit(code);
}
