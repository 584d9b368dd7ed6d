/** A chaos report against its targets, and as the lines `pnpm chaos` prints. */
import type { ChaosReport } from "./report.ts";

export const sum = (record: Record<string, number>) => Object.values(record).reduce((a, b) => a + b, 0);

/**
 * Whether a run met the targets: nothing lost or doubled, every answer in the envelope, no instance
 * crashed, the index equal to the chain, every recovery ≤ 10 s.
 */
export function targetsMet(r: ChaosReport, recoveryLimitMs = 10_000): boolean {
  return (
    sum(r.lost) === 0 &&
    sum(r.duplicated) === 0 &&
    r.nonEnvelope === 0 &&
    r.unexpected5xx === 0 &&
    r.projectsWithoutOwner === 0 &&
    r.crashes.length === 0 &&
    r.ratingMeansOff === 0 &&
    r.index.missing === 0 &&
    r.index.extra === 0 &&
    r.index.whitelistOff === 0 &&
    r.faults.every(
      (f) =>
        f.recoveryMs !== null &&
        f.recoveryMs <= recoveryLimitMs &&
        (f.takeoverMs === undefined || (f.takeoverMs !== null && f.takeoverMs <= recoveryLimitMs)),
    )
  );
}

export function formatReport(r: ChaosReport): string {
  const recoveries = r.faults.map((f) => f.recoveryMs ?? Number.POSITIVE_INFINITY);
  const lines = [
    `chaos: ${r.seconds} s of load, ${r.faults.length} faults, ${r.requests} requests (${Object.entries(
      r.statuses,
    )
      .map(([s, n]) => `${s}: ${n}`)
      .join(", ")}; no answer: ${r.connectionErrors})`,
    `acknowledged: ${r.acknowledged.adds} Adds, ${r.acknowledged.ratings} ratings, ${r.acknowledged.invitations} invitations, ${r.acknowledged.accepts} acceptances, ${r.acknowledged.roleChanges} chain role changes`,
    `lost: ${sum(r.lost)} (Adds ${r.lost.adds}, pins ${r.lost.pins}, ratings ${r.lost.ratings}, invitations ${r.lost.invitations}, acceptances ${r.lost.accepts})`,
    `duplicated: ${sum(r.duplicated)} (projects ${r.duplicated.projects}, same key other project ${r.duplicated.sameKeyOtherProject}, memberships ${r.duplicated.memberships}, owners ${r.duplicated.owners}, ratings ${r.duplicated.ratings}, users ${r.duplicated.users}, facts ${r.duplicated.facts}, indexed logs ${r.duplicated.indexedLogs})`,
    `non-envelope: ${r.nonEnvelope}; 5xx other than 503/504: ${r.unexpected5xx}`,
    `projects without an Owner: ${r.projectsWithoutOwner}; project ratings off their mean: ${r.ratingMeansOff}`,
    `index vs chain: ${r.index.chainLogs} logs on chain, ${r.index.indexedLogs} indexed, missing ${r.index.missing}, extra ${r.index.extra}; whitelist answers off the chain: ${r.index.whitelistOff}`,
    "recovery (first success on the fault's path):",
    ...r.faults.map(
      (f, i) =>
        `  ${String(i + 1).padStart(2)} ${f.kind.padEnd(14)} ${f.target.padEnd(34)} ${
          f.recoveryMs === null ? "NONE" : `${(f.recoveryMs / 1000).toFixed(2)} s`
        }${f.takeoverMs !== undefined ? `  (standby took the lock in ${f.takeoverMs === null ? "NONE" : `${(f.takeoverMs / 1000).toFixed(2)} s`})` : ""}`,
    ),
    `recovery max ${(Math.max(0, ...recoveries) / 1000).toFixed(2)} s; own RabbitMQ node start ${r.rabbitStartMs} ms`,
    `instances that crashed (started again): ${r.crashes.length}${r.crashes.length ? ` — ${r.crashes.join(", ")}` : ""}`,
    ...r.examples.map((e) => `  ! ${e}`),
    targetsMet(r)
      ? "targets met: 0 lost, 0 duplicated, 0 non-envelope, every recovery ≤ 10 s"
      : "TARGETS MISSED",
  ];
  return lines.join("\n");
}
