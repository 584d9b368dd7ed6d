import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

const root = join(import.meta.dirname, "..", "..");

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

/**
 * Node's arguments for a service of `services/`: the Node flags its package.json names under
 * `nodeFlags` (tuning its process needs wherever it runs: `pnpm start`, the tests, the benchmarks and the
 * image's `run-service` all read them here), then tsx and its `src/main.ts`, relative to the workspace
 * root. `extraFlags` come first (a profiler's, say).
 */
export function serviceNodeArgs(name: string, extraFlags: readonly string[] = []): string[] {
  return [
    ...extraFlags,
    ...serviceNodeFlags(name),
    "--import",
    "tsx",
    join("services", name, "src", "main.ts"),
  ];
}

/** The `nodeFlags` of a service's package.json; none when it names none. */
export function serviceNodeFlags(name: string): string[] {
  const manifest = JSON.parse(readFileSync(join(root, "services", name, "package.json"), "utf8")) as {
    nodeFlags?: unknown;
  };
  const flags = manifest.nodeFlags ?? [];
  if (!Array.isArray(flags) || !flags.every((flag) => typeof flag === "string" && flag.startsWith("--"))) {
    throw new Error(`services/${name}/package.json: nodeFlags must be a list of --flags`);
  }
  return flags;
}
