import { checkChainId, createChainClient, loadDeployment } from "@fundraise/contracts";
import {
  type AppDeps,
  guardPoolClients,
  openAppDatabase,
  processMetrics,
  type ServiceApp,
  watchRedis,
} from "@fundraise/service-kit";
import { Redis } from "ioredis";
import pg from "pg";
import type { ChainIndexerConfig } from "./config.ts";
import { migrations } from "./db/migrations/index.ts";
import { Cursor } from "./indexer/cursor.entity.ts";
import { SCHEMA } from "./indexer/index-store.ts";
import { startIndexer } from "./indexer/indexer.ts";
import { createProgress } from "./ops/progress.ts";
import { createProgressPublisher } from "./ops/progress-publisher.ts";
import { createChainReads } from "./reads/chain-reads.ts";
import { createHotKeys } from "./reads/hot-keys.ts";
import { serveChainRpc } from "./rpc/index.ts";

/** The chain indexer as `runService` runs it: `readiness` and `metrics` feed `/readyz` and `/metrics`. */
export type ChainIndexerApp = ServiceApp & Required<Pick<ServiceApp, "readiness" | "metrics">>;

/** Composition root: the only place that sees every dependency of the chain indexer. */
export async function startChainIndexerApp(deps: AppDeps<ChainIndexerConfig>): Promise<ChainIndexerApp> {
  const { config, log, bus, shutdown } = deps;
  const deployment = loadDeployment(config.chain.deploymentFile);
  const chain = createChainClient({ url: config.chain.url, timeoutMs: config.chain.timeoutMs });
  shutdown.add("chain", () => chain.close());
  await checkChainId(chain, deployment.chainId, (err) =>
    log.warn({ err }, "the chain is unreachable; indexing starts when it answers"),
  );
  const { orm, outbox } = await openAppDatabase(deps, { schema: SCHEMA, entities: [Cursor], migrations });
  // Reads are plain SQL over the stored logs (jsonb arguments), on a small pool of their own.
  const pool = new pg.Pool({ connectionString: config.db.url, max: 4 });
  guardPoolClients(pool, (err) => {
    processMetrics().dbError("connection");
    log.warn({ err }, "read connection failed");
  });
  shutdown.add("read connections", () => pool.end());
  // The chain-read cache: answers in Redis, renewed and invalidated by the writer (reads/hot-keys.ts).
  const redis = new Redis(config.redis.url, {
    maxRetriesPerRequest: 1,
    connectTimeout: 5_000,
    enableOfflineQueue: false,
    enableAutoPipelining: true,
  });
  // One line per burst of failed attempts while Redis is away (reads skip the cache meanwhile).
  watchRedis(redis, { log, url: config.redis.url });
  processMetrics().observeRedis(redis);
  shutdown.add("redis", () => redis.disconnect());
  const hotKeys = createHotKeys({
    redis,
    prefix: config.redis.prefix,
    chainId: deployment.chainId,
    log,
    ttlMs: config.redis.ttlMs,
  });
  const progress = createProgress({
    chainId: deployment.chainId,
    startBlock: deployment.startBlock,
    confirmations: config.chain.confirmations,
    maxLagBlocks: config.indexer.maxLagBlocks,
    intervalMs: config.indexer.progressLogMs,
  });
  // How far the writer is, in Redis for live clients (`chainProgressKey`); stopped before Redis closes.
  const publisher = createProgressPublisher({ redis, prefix: config.redis.prefix, progress, log });
  progress.onChange(publisher.changed);
  shutdown.add("progress publisher", () => publisher.stop());
  await serveChainRpc(
    bus,
    createChainReads(() => pool, deployment.chainId, hotKeys),
    progress,
    () => chain.blockNumber(),
  );
  const newHeads = chain.newHeads({ log });
  shutdown.add("new heads", () => newHeads.close());
  const indexer = startIndexer({
    chain,
    deployment,
    db: { url: config.db.url },
    log,
    progress,
    readCursor: async () => {
      const cursor = await orm.em.fork().findOne(Cursor, { chainId: deployment.chainId });
      return cursor ? Number(cursor.blockNumber) : null;
    },
    confirmations: config.chain.confirmations,
    reorgWindow: config.chain.reorgWindow,
    range: { min: config.indexer.rangeMin, max: config.indexer.rangeMax },
    pollIntervalMs: config.indexer.pollIntervalMs,
    newHeads,
    committed: hotKeys,
  });
  shutdown.add("indexer", () => indexer.stop());
  log.info(
    { chainId: deployment.chainId, registry: deployment.registry, startBlock: deployment.startBlock },
    "chain-indexer ready",
  );
  return {
    outbox,
    // The chain is this service's intake: stop indexing first, so the outbox relay's last pass publishes
    // the facts of the last range committed.
    closeIntake: () => indexer.stop(),
    readiness: () => progress.readiness(),
    metrics: () => progress.metrics(),
  };
}
