import {
  ChainEnv,
  ConfigError,
  chainSection,
  loadEnv,
  RedisEnv,
  redisSection,
  ServiceEnv,
  serviceSections,
} from "@fundraise/service-kit";
import Type from "typebox";

/** The chain indexer's environment: the shared fragments (the chain's as auth reads it) and its own. */
export const ChainIndexerEnv = {
  ...ServiceEnv,
  ...ChainEnv,
  ...RedisEnv,
  CHAIN_READ_CACHE_TTL_MS: Type.Integer({
    default: 30_000,
    minimum: 100,
    description: "how long chain-read answers live in Redis unless the indexer renews or replaces them",
  }),
  CHAIN_CONFIRMATIONS: Type.Integer({
    default: 0,
    minimum: 0,
    maximum: 1000,
    description: "blocks below the head before the indexer turns a block's logs into facts (0: at once)",
  }),
  CHAIN_REORG_WINDOW: Type.Integer({
    default: 128,
    minimum: 1,
    maximum: 100_000,
    description: "indexed block hashes kept to find the common ancestor of a reorg (deepest reorg handled)",
  }),
  CHAIN_LOG_RANGE_MIN: Type.Integer({
    default: 1,
    minimum: 1,
    description: "smallest eth_getLogs block range the indexer shrinks to when the provider refuses",
  }),
  CHAIN_LOG_RANGE_MAX: Type.Integer({
    default: 2000,
    minimum: 1,
    description: "largest eth_getLogs block range (the range doubles after each accepted request)",
  }),
  CHAIN_POLL_INTERVAL_MS: Type.Integer({
    default: 250,
    minimum: 10,
    description: "how often the indexer asks the chain for a new head once caught up",
  }),
  INDEXER_MAX_LAG_BLOCKS: Type.Integer({
    default: 20,
    minimum: 0,
    description: "the indexer's /readyz answers not ready while it is more blocks than this behind the head",
  }),
  INDEXER_PROGRESS_LOG_MS: Type.Integer({
    default: 5000,
    minimum: 100,
    description: "interval of the backfill progress log line (block, target, %, events/s, time left)",
  }),
};

export type ChainIndexerConfig = ReturnType<typeof loadConfig>;

/** Reads and checks the environment once (main.ts); tests pass literals. */
export function loadConfig(env: Record<string, string | undefined> = process.env, cwd = process.cwd()) {
  const e = loadEnv(ChainIndexerEnv, env);
  if (e.CHAIN_LOG_RANGE_MIN > e.CHAIN_LOG_RANGE_MAX) {
    throw new ConfigError(["CHAIN_LOG_RANGE_MIN must not exceed CHAIN_LOG_RANGE_MAX"]);
  }
  return Object.freeze({
    ...serviceSections(e),
    redis: { ...redisSection(e), ttlMs: e.CHAIN_READ_CACHE_TTL_MS },
    chain: {
      ...chainSection(e, cwd),
      confirmations: e.CHAIN_CONFIRMATIONS,
      reorgWindow: e.CHAIN_REORG_WINDOW,
    },
    indexer: {
      rangeMin: e.CHAIN_LOG_RANGE_MIN,
      rangeMax: e.CHAIN_LOG_RANGE_MAX,
      pollIntervalMs: e.CHAIN_POLL_INTERVAL_MS,
      maxLagBlocks: e.INDEXER_MAX_LAG_BLOCKS,
      progressLogMs: e.INDEXER_PROGRESS_LOG_MS,
    },
  });
}
