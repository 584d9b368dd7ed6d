import { checkIpfs, createKuboIpfs } from "@fundraise/ipfs";
import { type AppDeps, type Logger, openServiceDatabase, type ServiceApp } from "@fundraise/service-kit";
import type { StorageConfig } from "./config.ts";
import { createContentService } from "./content/content.service.ts";
import { Pin } from "./content/pin.entity.ts";
import { createPinRepository, STORAGE_SCHEMA } from "./content/pin.repository.ts";
import { projectsOverBus } from "./content/projects-side.ts";
import { createReconciler, type ReconcileRound, type Reconciler } from "./content/reconcile.ts";
import { migrations } from "./db/migrations/index.ts";
import { subscribeStorage } from "./subscribers/index.ts";

/** The started storage service; `reconcile` runs one reconciliation round now (tests, operators). */
export interface StorageApp extends ServiceApp {
  reconcile(): Promise<ReconcileRound>;
}

/**
 * Reconciliation rounds, `intervalMs` after the end of the previous one (rounds never overlap in a
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
      await run().catch((err: unknown) => log.warn({ err }, "reconciliation round failed"));
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
    /** The inventory's clock: when rows are recorded, and the grace periods (tests move it); Date.now by default. */
    clock?: () => number;
    /** The release window (tests shorten it); CONTENT_RELEASE_WINDOW_MS by default. */
    releaseWindowMs?: number;
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
  // The projects service's side of every unpin (ADR 0027) and of the sweep's question.
  const { releaser, heldContent } = projectsOverBus(bus);
  const clock = deps.clock ?? Date.now;
  const content = createContentService({
    ipfs,
    pins,
    releaser,
    clock,
    ...(deps.releaseWindowMs ? { windowMs: deps.releaseWindowMs } : {}),
    log,
  });
  const reconciliation = scheduleReconciliation(
    createReconciler({
      pins,
      content,
      heldContent,
      node: ipfs,
      graceMs: config.reconcile.graceMs,
      sweepUnrecorded: config.reconcile.sweepUnrecorded,
      clock,
      log,
    }),
    config.reconcile.intervalMs,
    log,
  );
  // The timer's rounds are work that does not come over the bus: they stop with the intake.
  const closeIntake = () => reconciliation.stop();
  shutdown.add("reconciliation", closeIntake);
  await subscribeStorage(bus, content);
  log.info({ reconcile: config.reconcile }, "storage service ready");
  return { outbox, reconcile: () => reconciliation.now(), closeIntake };
}
