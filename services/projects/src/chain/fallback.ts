import { isAppError } from "@fundraise/protocol";
import type { ChainIndex } from "../projects/chain.service.ts";

const unanswered = (error: unknown) =>
  isAppError(error) && (error.kind === "unavailable" || error.kind === "timeout");

/**
 * The chain index, and the chain itself when the index does not answer (no chain-indexer running, or
 * one too slow): "sync now" is one hop in the usual case and still works without the indexer.
 */
export function withDirectFallback(index: ChainIndex, direct: ChainIndex): ChainIndex {
  async function first<T>(
    ask: (source: ChainIndex) => Promise<T>,
    log: { warn(obj: object, msg: string): void },
  ): Promise<T> {
    try {
      return await ask(index);
    } catch (error) {
      if (!unanswered(error)) throw error;
      log.warn({ err: error }, "the chain index did not answer: reading the chain directly");
      return ask(direct);
    }
  }
  return {
    evaluation: (hash, ctx) => first((source) => source.evaluation(hash, ctx), ctx.log),
    auction: (hash, ctx) => first((source) => source.auction(hash, ctx), ctx.log),
  };
}
