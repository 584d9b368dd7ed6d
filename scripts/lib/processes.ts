import type { ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";

/** A loopback port nobody listens on right now (for test and benchmark runs of their own). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * SIGTERM, so the process runs its graceful shutdown, then SIGKILL after `graceMs`; resolves once it
 * exited. A process that already exited resolves at once.
 */
export function stopProcess(child: ChildProcess, graceMs = 10_000): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const kill = setTimeout(() => child.kill("SIGKILL"), graceMs);
    child.once("exit", () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** The tracing preload: nothing unless OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/adr/0031-tracing.md). */
const TELEMETRY = "@fundraise/service-kit/telemetry";

/**
 * Node's arguments for a service of `services/`: tsx, the tracing preload and its `src/main.ts`, relative
 * to the workspace root, as `pnpm start`, the tests, the benchmarks and the image's `run-service` all
 * start it. `extraFlags` come first (a profiler's, say).
 */
export function serviceNodeArgs(name: string, extraFlags: readonly string[] = []): string[] {
  return [...extraFlags, "--import", "tsx", "--import", TELEMETRY, join("services", name, "src", "main.ts")];
}
