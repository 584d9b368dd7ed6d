/** What a chaos run counts: its faults, the answers it got, and what its checks found afterwards. */

export type FaultKind = "kill" | "rabbitmq" | "redis" | "postgres" | "ipfs" | "chain" | "indexer-writer";

export interface FaultRecord {
  kind: FaultKind;
  target: string;
  at: number;
  /** Milliseconds from the fault's end (the component back, or the kill) to the first success on its path. */
  recoveryMs: number | null;
  /** The indexer's standby: milliseconds from the writer's kill to its taking the lock. */
  takeoverMs?: number | null;
}

export interface ChaosReport {
  seconds: number;
  faults: FaultRecord[];
  requests: number;
  statuses: Record<string, number>;
  /** Requests that never got an answer (the connection refused or cut: a killed replica). */
  connectionErrors: number;
  acknowledged: { adds: number; ratings: number; invitations: number; accepts: number; roleChanges: number };
  lost: { adds: number; pins: number; ratings: number; invitations: number; accepts: number };
  duplicated: {
    projects: number;
    memberships: number;
    ratings: number;
    owners: number;
    users: number;
    facts: number;
    indexedLogs: number;
    sameKeyOtherProject: number;
  };
  nonEnvelope: number;
  unexpected5xx: number;
  examples: string[];
  projectsWithoutOwner: number;
  ratingMeansOff: number;
  index: { chainLogs: number; indexedLogs: number; missing: number; extra: number; whitelistOff: number };
  rabbitStartMs: number;
  /** Instances that exited without being killed (a supervisor's restart follows, as `pnpm start`'s). */
  crashes: string[];
}

/** A report with nothing counted yet. */
export function emptyReport(): ChaosReport {
  return {
    seconds: 0,
    faults: [],
    requests: 0,
    statuses: {},
    connectionErrors: 0,
    acknowledged: { adds: 0, ratings: 0, invitations: 0, accepts: 0, roleChanges: 0 },
    lost: { adds: 0, pins: 0, ratings: 0, invitations: 0, accepts: 0 },
    duplicated: {
      projects: 0,
      memberships: 0,
      ratings: 0,
      owners: 0,
      users: 0,
      facts: 0,
      indexedLogs: 0,
      sameKeyOtherProject: 0,
    },
    nonEnvelope: 0,
    unexpected5xx: 0,
    examples: [],
    projectsWithoutOwner: 0,
    ratingMeansOff: 0,
    index: { chainLogs: 0, indexedLogs: 0, missing: 0, extra: 0, whitelistOff: 0 },
    rabbitStartMs: 0,
    crashes: [],
  };
}

/** Adds an example of what went wrong to the report (the first 20 only). */
export function noteExample(report: ChaosReport, line: string): void {
  if (report.examples.length < 20) report.examples.push(line);
}
