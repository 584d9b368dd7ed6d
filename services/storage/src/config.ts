import { IpfsEnv, ipfsSections } from "@fundraise/ipfs";
import { loadEnv, ServiceEnv, serviceSections } from "@fundraise/service-kit";
import Type from "typebox";

/** The reconciliation (content/reconcile.ts, ADR 0023). */
export const ReconcileEnv = {
  RECONCILE_INTERVAL_MS: Type.Integer({
    default: 300_000,
    minimum: 0,
    maximum: 86_400_000,
    description:
      "pause between two reconciliation rounds (unpin content no project holds, pin again what the node lost); 0 turns it off",
  }),
  ORPHAN_GRACE_MS: Type.Integer({
    default: 900_000,
    // Not a safety margin: an unpin needs a release, and a write that has not committed yet meets the
    // release and pins again (ADR 0027). The default, far above the Add's 60 s deadline, spares writes
    // under way that second pin; tests run with seconds.
    minimum: 1_000,
    maximum: 604_800_000,
    description:
      "age (since recorded, or since first seen pinned without a record) before content no project holds is unpinned",
  }),
  ADOPT_UNRECORDED_PINS: Type.Boolean({
    default: true,
    description:
      "sweep content the node pins without an inventory row (a project's layout, unrecorded for ORPHAN_GRACE_MS): unpinned when no project holds it, recorded when one does; false for a node shared with others",
  }),
};

export const StorageEnv = { ...ServiceEnv, ...IpfsEnv, ...ReconcileEnv };

export type StorageConfig = ReturnType<typeof loadConfig>;

export function loadConfig(env: Record<string, string | undefined> = process.env) {
  const e = loadEnv(StorageEnv, env);
  return Object.freeze({
    ...serviceSections(e),
    ...ipfsSections(e),
    reconcile: {
      intervalMs: e.RECONCILE_INTERVAL_MS,
      graceMs: e.ORPHAN_GRACE_MS,
      sweepUnrecorded: e.ADOPT_UNRECORDED_PINS,
    },
  });
}
