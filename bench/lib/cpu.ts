import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

const TICKS_PER_SECOND = 100;

/** CPU milliseconds a process has used so far, in user space and in the kernel; 0 for one that is gone. */
export function cpuSplitMs(pid: number): { user: number; kernel: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return {
      user: (Number(fields[11]) * 1000) / TICKS_PER_SECOND,
      kernel: (Number(fields[12]) * 1000) / TICKS_PER_SECOND,
    };
  } catch {
    return { user: 0, kernel: 0 };
  }
}

/** CPU milliseconds (user + system) a process has used so far; 0 for one that is gone. */
export function cpuMs(pid: number): number {
  const { user, kernel } = cpuSplitMs(pid);
  return user + kernel;
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

/** CPU per operation of one group of processes, in µs: all of it, and the part spent in the kernel. */
export interface CpuShare {
  total: number;
  kernel: number;
}

/**
 * CPU used per operation by each group of processes while `work` runs, in µs. Groups are read again at
 * the end (a Postgres backend may have started in between) and counted from 0 when new.
 */
export async function cpuPerOperation<T>(
  groups: Record<string, () => number[]>,
  work: () => Promise<{ result: T; operations: number }>,
): Promise<{ result: T; perOperationUs: Record<string, CpuShare> }> {
  const before = new Map<number, { user: number; kernel: number }>();
  for (const pids of Object.values(groups)) for (const pid of pids()) before.set(pid, cpuSplitMs(pid));
  const { result, operations } = await work();
  const perOperationUs: Record<string, CpuShare> = {};
  const per = (ms: number) => (ms * 1000) / Math.max(operations, 1);
  for (const [name, pids] of Object.entries(groups)) {
    let user = 0;
    let kernel = 0;
    for (const pid of pids()) {
      const now = cpuSplitMs(pid);
      const then = before.get(pid) ?? { user: 0, kernel: 0 };
      user += now.user - then.user;
      kernel += now.kernel - then.kernel;
    }
    perOperationUs[name] = { total: per(user + kernel), kernel: per(kernel) };
  }
  return { result, perOperationUs };
}

/**
 * The table `cpuPerOperation` measured, with the system's total (every group but `excluded`). The kernel
 * column is the part spent in system calls and what they set off (on loopback, a send runs the
 * receiver's side of TCP too): for the services it is mostly the cost of their messages.
 */
export function printCpuTable(
  perOperationUs: Record<string, CpuShare>,
  unit: string,
  excluded: string[] = [],
) {
  console.log(`\n${"process".padEnd(22)} ${`CPU µs/${unit}`.padStart(16)} ${"in the kernel".padStart(14)}`);
  let sum = 0;
  let kernel = 0;
  const row = (name: string, share: CpuShare, note = "") =>
    console.log(
      `${name.padEnd(22)} ${share.total.toFixed(0).padStart(16)} ${share.kernel.toFixed(0).padStart(14)}${note}`,
    );
  for (const [name, share] of Object.entries(perOperationUs)) {
    if (!excluded.includes(name)) {
      sum += share.total;
      kernel += share.kernel;
    }
    row(name, share);
  }
  row("system", { total: sum, kernel }, `  (without ${excluded.join(", ")})`);
}
