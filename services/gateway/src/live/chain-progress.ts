import { chainProgressKey } from "@fundraise/protocol";
import type { Logger } from "@fundraise/service-kit";
import type { Redis } from "ioredis";
import type { LiveHub } from "./hub.ts";

/**
 * `chain` messages: the indexer keeps how far it is in Redis (protocol `chainProgressKey`, at most once a
 * second); while this replica has streams it reads that once a second and tells them when the index
 * advanced. No id: progress is a state, not an event to resume from.
 */
export function followChainProgress(deps: {
  redis: Redis;
  prefix: string;
  hub: LiveHub;
  log: Logger;
  everyMs?: number;
}) {
  let last: number | null = null;
  const read = async () => {
    if (deps.hub.size === 0) return;
    try {
      const raw = await deps.redis.get(chainProgressKey(deps.prefix));
      if (raw === null) return;
      const { indexedBlock, headBlock } = JSON.parse(raw) as { indexedBlock: unknown; headBlock: unknown };
      if (!Number.isInteger(indexedBlock) || !Number.isInteger(headBlock) || indexedBlock === last) return;
      last = indexedBlock as number;
      deps.hub.broadcast({ event: "chain", data: JSON.stringify({ indexedBlock, headBlock }) });
    } catch (error) {
      deps.log.debug({ err: error }, "chain progress not read");
    }
  };
  const timer = setInterval(() => void read(), deps.everyMs ?? 1000);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
