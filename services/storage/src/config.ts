import { loadEnv, ServiceEnv, serviceSections } from "@fundraise/service-kit";
import Type from "typebox";

const MiB = 1_048_576;

/** The storage service's own variables. */
export const IpfsEnv = {
  IPFS_API_URL: Type.String({
    default: "http://127.0.0.1:5001",
    pattern: "^https?://",
    description: "Kubo RPC API; unset: `pnpm start` starts a local Kubo-RPC-compatible node",
  }),
  IPFS_TIMEOUT_MS: Type.Integer({
    default: 30_000,
    minimum: 100,
    maximum: 600_000,
    description: "deadline of one IPFS add, pin or unpin (504 beyond)",
  }),
  IPFS_READ_TIMEOUT_MS: Type.Integer({
    default: 10_000,
    minimum: 100,
    maximum: 600_000,
    description: "deadline of reading content back from IPFS (504 beyond)",
  }),
  IPFS_STARTUP_WAIT_MS: Type.Integer({
    default: 15_000,
    minimum: 0,
    maximum: 600_000,
    description: "how long the storage service waits for the IPFS API at start-up before it gives up",
  }),
  MAX_FILE_BYTES: Type.Integer({
    default: 10 * MiB,
    minimum: 1,
    maximum: 100 * MiB,
    description: "largest whitepaper in bytes (413 beyond)",
  }),
  MAX_IMAGE_BYTES: Type.Integer({
    default: 5 * MiB,
    minimum: 1,
    maximum: 100 * MiB,
    description: "largest project image in bytes (413 beyond)",
  }),
};

/** Uploads streamed in parts (upload/upload-session.ts). */
export const UploadEnv = {
  UPLOAD_IDLE_MS: Type.Integer({
    default: 30_000,
    minimum: 100,
    maximum: 600_000,
    description:
      "an upload that receives no part for this long is dropped (its sender stopped): its add is cancelled, nothing is pinned",
  }),
};

/** The orphan reconciliation (content/reconcile.ts). */
export const ReconcileEnv = {
  RECONCILE_INTERVAL_MS: Type.Integer({
    default: 300_000,
    minimum: 0,
    maximum: 86_400_000,
    description:
      "pause between two orphan reconciliation rounds (unpin content no project holds); 0 turns it off",
  }),
  ORPHAN_GRACE_MS: Type.Integer({
    default: 900_000,
    // Twice the deadline of the projects service's Add and Update (60 s): content younger than this may
    // belong to an Add that has not committed yet.
    minimum: 120_000,
    maximum: 604_800_000,
    description: "age since its last upload before live content no project holds counts as an orphan",
  }),
  ADOPT_UNRECORDED_PINS: Type.Boolean({
    default: true,
    description:
      "record content the node pins without an inventory row (a project's layout, unrecorded for ORPHAN_GRACE_MS) so it is reconciled; false for a node shared with others",
  }),
};

export const StorageEnv = { ...ServiceEnv, ...IpfsEnv, ...UploadEnv, ...ReconcileEnv };

export type StorageConfig = ReturnType<typeof loadConfig>;

export function loadConfig(env: Record<string, string | undefined> = process.env) {
  const e = loadEnv(StorageEnv, env);
  return Object.freeze({
    ...serviceSections(e),
    ipfs: {
      url: e.IPFS_API_URL,
      timeoutMs: e.IPFS_TIMEOUT_MS,
      readTimeoutMs: e.IPFS_READ_TIMEOUT_MS,
      startupWaitMs: e.IPFS_STARTUP_WAIT_MS,
    },
    limits: { maxFileBytes: e.MAX_FILE_BYTES, maxImageBytes: e.MAX_IMAGE_BYTES },
    uploads: { idleMs: e.UPLOAD_IDLE_MS },
    reconcile: {
      intervalMs: e.RECONCILE_INTERVAL_MS,
      graceMs: e.ORPHAN_GRACE_MS,
      adoptUnrecorded: e.ADOPT_UNRECORDED_PINS,
    },
  });
}
