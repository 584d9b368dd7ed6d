import { isAppError, ProjectsRpc } from "@fundraise/protocol";
import {
  type AppDeps,
  type Logger,
  metricLines,
  openServiceDatabase,
  type ServiceApp,
} from "@fundraise/service-kit";
import type { StorageConfig } from "./config.ts";
import { createContentService } from "./content/content.service.ts";
import { createKuboIpfs, type Ipfs } from "./content/ipfs.ts";
import { Pin } from "./content/pin.entity.ts";
import { createPinRepository, STORAGE_SCHEMA } from "./content/pin.repository.ts";
import { createReconciler, type ReconcileRound, type Reconciler } from "./content/reconcile.ts";
import { migrations } from "./db/migrations/index.ts";
import { serveStorageRpc } from "./rpc/index.ts";
import { UploadSession } from "./upload/upload-session.ts";

/**
 * Waits for the IPFS API (up to `waitMs`) and checks its import settings: a node that does not hash
 * `hello world\n` to Kubo's CID would give content hashes the chain does not know, so the service refuses
 * to start on it.
 */
export async function checkIpfs(ipfs: Ipfs, waitMs: number, log: Logger): Promise<{ version: string }> {
  const until = Date.now() + waitMs;
  for (;;) {
    try {
      return await ipfs.selfCheck();
    } catch (error) {
      const retryable = isAppError(error) && error.retryable;
      if (!retryable || Date.now() >= until) throw error;
      log.warn({ err: error }, "IPFS API not reachable yet; retrying");
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/** The started storage service; `reconcile` runs one orphan reconciliation round now (tests, operators). */
export interface StorageApp extends ServiceApp {
  reconcile(): Promise<ReconcileRound>;
  /** Uploads receiving parts on this instance now. */
  openUploads(): number;
}

/**
 * Orphan reconciliation rounds, `intervalMs` after the end of the previous one (rounds never overlap in a
 * process; across replicas the round's advisory lock keeps them apart). 0: no timer, rounds only on demand.
 */
export function scheduleReconciliation(reconciler: Reconciler, intervalMs: number, log: Logger) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const run = (): Promise<ReconcileRound> => {
    const round = reconciler.round();
    running = round.then(
      () => undefined,
      () => undefined,
    );
    return round;
  };
  const next = () => {
    if (stopped || intervalMs === 0) return;
    timer = setTimeout(async () => {
      await run().catch((err: unknown) => log.warn({ err }, "orphan reconciliation round failed"));
      next();
    }, intervalMs);
    timer.unref();
  };
  next();
  return {
    /** Waits for a round under way, then runs one. */
    async now(): Promise<ReconcileRound> {
      if (stopped) throw new Error("the storage service is stopping: no reconciliation round");
      await running;
      return run();
    },
    /** No new round; waits for the one under way. */
    async stop(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

/** Composition root: the only place that sees every dependency of the storage service. */
export async function startStorageApp(
  deps: AppDeps<StorageConfig> & {
    /** The reconciliation's clock for its grace periods (tests move it); Date.now by default. */
    clock?: () => number;
  },
): Promise<StorageApp> {
  const { config, log, bus, shutdown } = deps;
  const ipfs = createKuboIpfs(config.ipfs);
  const { version } = await checkIpfs(ipfs, config.ipfs.startupWaitMs, log);
  log.info({ url: config.ipfs.url, version }, "IPFS API checked: Kubo's CIDs");
  const { orm, outbox } = await openServiceDatabase({
    url: config.db.url,
    schema: STORAGE_SCHEMA,
    entities: [Pin],
    migrations,
    bus,
    log,
    shutdown,
  });
  const pins = createPinRepository(() => orm.em.fork(), { url: config.db.url, log });
  const content = createContentService({
    ipfs,
    pins,
    limits: config.limits,
    graceMs: config.reconcile.graceMs,
    log,
  });
  const uploads = await serveStorageRpc(bus, content, {
    newSession: () =>
      new UploadSession({ ipfs, content, limits: config.limits, ipfsTimeoutMs: config.ipfs.timeoutMs }),
    idleMs: config.uploads.idleMs,
  });
  const reconciliation = scheduleReconciliation(
    createReconciler({
      pins,
      content,
      heldContent: (fileHashes, ctx) => bus.call(ProjectsRpc.heldContent, { fileHashes }, ctx),
      graceMs: config.reconcile.graceMs,
      node: config.reconcile.adoptUnrecorded ? ipfs : undefined,
      ...(deps.clock ? { clock: deps.clock } : {}),
      log,
    }),
    config.reconcile.intervalMs,
    log,
  );
  // The timer's rounds are work that does not come over the bus: they stop with the intake. So do open
  // uploads: once this instance stops consuming, their next parts cannot arrive.
  const closeIntake = async () => {
    uploads.close();
    await reconciliation.stop();
  };
  shutdown.add("uploads and reconciliation", closeIntake);
  log.info({ reconcile: config.reconcile, instance: uploads.instance }, "storage service ready");
  return {
    outbox,
    reconcile: () => reconciliation.now(),
    openUploads: () => uploads.open,
    closeIntake,
    metrics: () =>
      [
        metricLines(
          "storage_uploads_open",
          "gauge",
          "Uploads receiving parts on this instance.",
          uploads.open,
        ),
        metricLines(
          "storage_upload_parts_total",
          "counter",
          "Upload parts received by this instance.",
          uploads.partsReceived,
        ),
      ].join("\n"),
  };
}
