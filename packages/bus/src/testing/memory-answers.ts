import type { KeptAnswer, RpcAnswers } from "../rpc-answers.ts";

/**
 * `RpcAnswers` in a Map, for tests: what `keep` was given (`kept`), and a switch that makes the next
 * `keep` fail (`failNextKeep`) the way a lost database would.
 */
export function createMemoryAnswers(): RpcAnswers & { kept: Map<string, KeptAnswer>; failNextKeep: boolean } {
  const kept = new Map<string, KeptAnswer>();
  const answers = {
    kept,
    failNextKeep: false,
    async find(key: string) {
      return structuredClone(kept.get(key) ?? null);
    },
    async keep(key: string, fingerprint: string, envelope: KeptAnswer["envelope"]) {
      if (answers.failNextKeep) {
        answers.failNextKeep = false;
        throw new Error("test: the answer cannot be kept");
      }
      if (!kept.has(key)) kept.set(key, structuredClone({ fingerprint, envelope }));
    },
  };
  return answers;
}
