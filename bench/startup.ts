/**
 * `pnpm bench:startup [-- --runs 3] [--services users,gateway]`: how long a new replica of each service takes
 * from `node` launch to a 200 on its /readyz (the gateway's on its PORT, the others' on HEALTH_PORT), started
 * from its TypeScript sources through tsx and from `pnpm build`'s output, with the ratios. tsx runs twice: with
 * its compile cache disabled (TSX_DISABLE_CACHE=1), as in a new container whose temp directory is empty, and
 * with the cache this machine keeps (a developer's second `pnpm start`).
 *
 * The system runs first (e2e/system.ts: its own database, vhost, Redis prefix, anvil, IPFS stand-in), so its
 * migrations are applied and each measured process is what a scaled-out replica is: one more instance
 * that connects, finds its schema current and serves. Runs alternate source/built so a noisy neighbour
 * on the machine hits both alike; the build runs first (`pnpm build`'s code, timed).
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ALL_SERVICES, startSystem } from "../e2e/system.ts";
import { buildTarget, buildTargets } from "../scripts/build.ts";
import { freePort, type ServiceCode, serviceNodeArgs, stopProcess } from "../scripts/lib/processes.ts";
import { median } from "./lib/stats.ts";

const root = join(import.meta.dirname, "..");
const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    runs: { type: "string", default: "3" },
    services: { type: "string" },
    // Prints each replica's start-up log lines (at debug) with their ms since node launch: where the time goes.
    trace: { type: "boolean", default: false },
  },
});
const runs = Number(values.runs);
const services = values.services ? values.services.split(",") : ALL_SERVICES;

const buildStarted = performance.now();
for (const target of buildTargets()) {
  const { missing } = await buildTarget(target);
  if (missing.length > 0)
    throw new Error(`${target.dir} imports ${missing.join(", ")}, not among its dependencies`);
}
process.stdout.write(`pnpm build: ${(performance.now() - buildStarted).toFixed(0)} ms\n`);

const system = await startSystem({ code: "built" });
/** One replica: node launch → /readyz 200, in ms; the process is stopped before the next one starts. */
type Mode = "cold" | "warm" | "built";
const modes: Mode[] = ["cold", "warm", "built"];
const codeOf = (mode: Mode): ServiceCode => (mode === "built" ? "built" : "source");

async function replica(name: string, mode: Mode, env: Record<string, string>): Promise<number> {
  const code = codeOf(mode);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/readyz`;
  const started = performance.now();
  const child = spawn(process.execPath, serviceNodeArgs(name, [], code), {
    cwd: root,
    env: {
      ...env,
      ...(name === "gateway" ? { PORT: String(port) } : { HEALTH_PORT: String(port) }),
      ...(mode === "cold" ? { TSX_DISABLE_CACHE: "1" } : {}),
    },
    stdio: ["ignore", values.trace ? "pipe" : "ignore", "pipe"],
  });
  const launched = Date.now();
  let stderr = "";
  let stdout = "";
  child.stderr?.on("data", (c) => (stderr += c));
  child.stdout?.on("data", (c) => (stdout += c));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${name} (${mode}) exited ${child.exitCode}:\n${stderr}`);
      const ok = await fetch(url).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) {
        const ms = performance.now() - started;
        if (values.trace) trace(`${name} (${mode})`, launched, stdout, ms);
        return ms;
      }
      if (performance.now() - started > 60_000) throw new Error(`${name} (${mode}) not ready in 60 s`);
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await stopProcess(child);
  }
}

/** The log lines up to ready, each with its ms since launch. */
function trace(label: string, launched: number, stdout: string, readyMs: number): void {
  const lines: string[] = [];
  let previous: string | undefined;
  let count = 0;
  for (const line of stdout.split("\n")) {
    let entry: { time?: string; msg?: string; ms?: number };
    try {
      entry = JSON.parse(line);
    } catch {
      continue;
    }
    const at = Date.parse(entry.time ?? "") - launched;
    const what = entry.ms === undefined ? entry.msg : `${entry.msg} (${entry.ms} ms)`;
    // Repeated lines (one "serving RPC" per procedure) folded into the last, with their count.
    if (what === previous) {
      count += 1;
      lines[lines.length - 1] = `  ${String(at).padStart(6)} ms  ${what} ×${count}`;
    } else {
      count = 1;
      lines.push(`  ${String(at).padStart(6)} ms  ${what}`);
    }
    previous = what;
  }
  process.stdout.write(`${label}: ready at ${readyMs.toFixed(0)} ms\n${lines.join("\n")}\n`);
}

try {
  const env = {
    ...process.env,
    ...system.serviceEnv,
    LOG_LEVEL: values.trace ? "debug" : "warn",
  } as Record<string, string>;
  const rows: string[] = [];
  for (const name of services) {
    const times: Record<Mode, number[]> = { cold: [], warm: [], built: [] };
    for (let i = 0; i < runs; i++) {
      for (const mode of modes) times[mode].push(await replica(name, mode, env));
    }
    const [cold, warm, built] = modes.map((mode) => median(times[mode])) as [number, number, number];
    const ms = (t: number) => t.toFixed(0).padStart(7);
    const ratio = (t: number) => `${(t / built).toFixed(2)}x`.padStart(8);
    rows.push(
      `${name.padEnd(14)}${ms(cold)}${ms(warm)}${ms(built)}${ratio(cold)}${ratio(warm)}   ` +
        modes.map((mode) => `${mode} ${times[mode].map((t) => t.toFixed(0)).join("/")}`).join("  "),
    );
  }
  process.stdout.write(
    `node launch → /readyz 200 (ms), median of ${runs}; tsx without / with its compile cache, built output\n` +
      `${"service".padEnd(14)}${["cold", "warm", "built"].map((h) => h.padStart(7)).join("")}` +
      `${["cold/b", "warm/b"].map((h) => h.padStart(8)).join("")}\n${rows.join("\n")}\n`,
  );
} finally {
  await system.stop();
}
