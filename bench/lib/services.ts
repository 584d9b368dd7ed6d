import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { serviceNodeArgs, stopProcess } from "../../scripts/lib/processes.ts";

const root = join(import.meta.dirname, "..", "..");

/** The processes a benchmark starts (services, baselines), stopped together at the end. */
export function benchProcesses(nodeFlags: string[] = []) {
  const children: ChildProcess[] = [];
  const start = (args: string[], env: Record<string, string>): ChildProcess => {
    const child = spawn(process.execPath, args, {
      cwd: root,
      env: { ...process.env, LOG_LEVEL: "warn", ...env },
      stdio: ["ignore", "ignore", "inherit"],
    });
    children.push(child);
    return child;
  };
  return {
    /** Runs a service of `services/` with its own Node flags (serviceNodeArgs), its logs at warn. */
    service: (name: string, env: Record<string, string>) => start(serviceNodeArgs(name, nodeFlags), env),
    /** Runs another TypeScript entry point of the workspace with tsx, its logs at warn. */
    run: (script: string, env: Record<string, string>) =>
      start([...nodeFlags, "--import", "tsx", script], env),
    stopAll: () => Promise.all(children.map((child) => stopProcess(child))),
  };
}

/** Waits (up to 60 s) until `url` answers 200. */
export async function ready(url: string): Promise<void> {
  const until = Date.now() + 60_000;
  while (Date.now() < until) {
    if ((await fetch(url).catch(() => undefined))?.ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer 200 within 60 s`);
}

/**
 * Rate limits lifted for every service a benchmark starts (set before the system starts): the limits
 * are the system's defence, not what a benchmark measures.
 */
export function liftRateLimits(extra: Record<string, string> = {}): void {
  Object.assign(process.env, {
    AUTH_RATE_LIMIT_PER_MINUTE: "1000000",
    RATE_LIMIT_PER_MINUTE: "100000000",
    NONCE_PER_IP_PER_MINUTE: "1000000",
    NONCE_PER_IP_ADDRESS_PER_MINUTE: "1000000",
    LOGIN_FAILURES_PER_IP_PER_MINUTE: "1000000",
    LOGIN_FAILURES_PER_IP_ADDRESS_PER_MINUTE: "1000000",
    REGISTER_PER_IP_PER_HOUR: "1000000",
    REGISTER_PER_IP_ADDRESS_PER_HOUR: "1000000",
    ...extra,
  });
}
