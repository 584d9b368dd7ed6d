import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { waitFor } from "@fundraise/bus/testing";
import { serviceNodeArgs } from "../../../../scripts/lib/processes.ts";
import { assertBundlesCurrent, testServiceCode } from "../../../../scripts/lib/service-code.ts";

const ROOT = join(import.meta.dirname, "../../../..");

/**
 * The indexer as its own process, as `pnpm start` (its sources through tsx) or the image (its bundle:
 * E2E_SERVICE_CODE=built, as in `pnpm test`) runs it.
 */
export interface IndexerProcess {
  child: ChildProcess;
  /** The `msg` of every JSON log line so far. */
  messages: string[];
  /** Waits for a log line with this message. */
  said(msg: string, timeoutMs?: number): Promise<void>;
  /** kill -9: no shutdown, no last outbox pass, the connections just drop. */
  kill(): Promise<void>;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<void>;
}

export function spawnIndexer(env: Record<string, string>): IndexerProcess {
  const code = testServiceCode();
  if (code === "built") assertBundlesCurrent(["chain-indexer"]);
  const child = spawn(process.execPath, serviceNodeArgs("chain-indexer", [], code), {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const messages: string[] = [];
  let buffer = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffer += chunk.toString("utf8");
    const lines = buffer.split("\n");
    buffer = lines.pop() ?? "";
    for (const line of lines) {
      try {
        messages.push((JSON.parse(line) as { msg: string }).msg);
      } catch {
        messages.push(line);
      }
    }
  });
  child.stderr?.on("data", (chunk: Buffer) => messages.push(chunk.toString("utf8")));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    child,
    messages,
    said: (msg, timeoutMs = 20_000) =>
      waitFor(() => messages.includes(msg), timeoutMs, `"${msg}" in ${JSON.stringify(messages.slice(-5))}`),
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      child.kill("SIGTERM");
      await exited;
    },
  };
}
