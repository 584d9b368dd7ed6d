import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

const TICKS_PER_SECOND = 100;

/** CPU milliseconds (user + system) a process has used so far; 0 for one that is gone. */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** Pids of the processes whose name or, with `fullCommand`, command line matches `pattern` (pgrep). */
export function pidsOf(pattern: string, fullCommand = false): number[] {
  try {
    const args = fullCommand ? ["-f", pattern] : ["-x", pattern];
    return execFileSync("pgrep", args, { encoding: "utf8" }).trim().split("\n").map(Number);
  } catch {
    return [];
  }
}

/**
 * CPU used per operation by each group of processes while `work` runs, in µs. Groups are read again at
 * the end (a Postgres backend may have started in between) and counted from 0 when new.
 */
export async function cpuPerOperation<T>(
  groups: Record<string, () => number[]>,
  work: () => Promise<{ result: T; operations: number }>,
): Promise<{ result: T; perOperationUs: Record<string, number> }> {
  const before = new Map<number, number>();
  for (const pids of Object.values(groups)) for (const pid of pids()) before.set(pid, cpuMs(pid));
  const { result, operations } = await work();
  const perOperationUs: Record<string, number> = {};
  for (const [name, pids] of Object.entries(groups)) {
    let ms = 0;
    for (const pid of pids()) ms += cpuMs(pid) - (before.get(pid) ?? 0);
    perOperationUs[name] = (ms * 1000) / Math.max(operations, 1);
  }
  return { result, perOperationUs };
}

/** The table `cpuPerOperation` measured, with the system's total (every group but `excluded`). */
export function printCpuTable(perOperationUs: Record<string, number>, unit: string, excluded: string[] = []) {
  console.log(`\n${"process".padEnd(22)} ${`CPU µs/${unit}`.padStart(16)}`);
  let sum = 0;
  for (const [name, us] of Object.entries(perOperationUs)) {
    if (!excluded.includes(name)) sum += us;
    console.log(`${name.padEnd(22)} ${us.toFixed(0).padStart(16)}`);
  }
  console.log(`${"system".padEnd(22)} ${sum.toFixed(0).padStart(16)}  (without ${excluded.join(", ")})`);
}
