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
 * Where a service's code comes from: its TypeScript sources through tsx (`pnpm start`, the tests, the
 * benchmarks), or the JavaScript that `pnpm build` wrote (`services/<name>/dist/main.js`, what the image runs).
 */
export type ServiceCode = "source" | "built";

/** A service's entry point, relative to the workspace root. */
export function serviceEntry(name: string, code: ServiceCode = "source"): string {
  return code === "built"
    ? join("services", name, "dist", "main.js")
    : join("services", name, "src", "main.ts");
}

/** The tracing preload as `pnpm build` wrote it (the image's `run-service` names the same file). */
export const BUILT_TELEMETRY = "./packages/service-kit/dist/telemetry.js";

/**
 * Node's arguments for a service of `services/`, relative to the workspace root, as `pnpm start`, the
 * tests, the benchmarks and the image's `run-service` all start it: tsx, the tracing preload and its
 * `src/main.ts`, or the built preload and `dist/main.js` with no loader. `extraFlags` come first (a
 * profiler's, say).
 */
export function serviceNodeArgs(
  name: string,
  extraFlags: readonly string[] = [],
  code: ServiceCode = "source",
): string[] {
  const entry = serviceEntry(name, code);
  return code === "built"
    ? [...extraFlags, "--import", BUILT_TELEMETRY, entry]
    : [...extraFlags, "--import", "tsx", "--import", TELEMETRY, entry];
}
