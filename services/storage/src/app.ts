import { checkIpfs, createKuboIpfs } from "@fundraise/ipfs";
import { ProjectsRpc } from "@fundraise/protocol";
import { type AppDeps, type Logger, openServiceDatabase, type ServiceApp } from "@fundraise/service-kit";
import type { StorageConfig } from "./config.ts";
import { createContentService } from "./content/content.service.ts";
import { Pin } from "./content/pin.entity.ts";
import { createPinRepository, STORAGE_SCHEMA } from "./content/pin.repository.ts";
import { createReconciler, type ReconcileRound, type Reconciler } from "./content/reconcile.ts";
import { migrations } from "./db/migrations/index.ts";
import { serveStorageRpc } from "./rpc/index.ts";

/** The started storage service; `reconcile` runs one orphan reconciliation round now (tests, operators). */
export interface StorageApp extends ServiceApp {
  reconcile(): Promise<ReconcileRound>;
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
  await serveStorageRpc(bus, content);
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
  // The timer's rounds are work that does not come over the bus: they stop with the intake.
  const closeIntake = () => reconciliation.stop();
  shutdown.add("reconciliation", closeIntake);
  log.info({ reconcile: config.reconcile }, "storage service ready");
  return { outbox, reconcile: () => reconciliation.now(), closeIntake };
}
