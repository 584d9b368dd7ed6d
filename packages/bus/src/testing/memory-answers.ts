import type { KeptAnswer, KeyClaim, RpcAnswers } from "../rpc-answers.ts";

/**
 * `RpcAnswers` in Maps, for tests: what `keep` was given (`kept`), the keys runs hold (`held`), and a
 * switch that makes the next `keep` fail (`failNextKeep`) the way a lost database would. A claim never
 * lapses here.
 */
export function createMemoryAnswers(): RpcAnswers & {
  kept: Map<string, KeptAnswer>;
  held: Map<string, string>;
  failNextKeep: boolean;
} {
  const kept = new Map<string, KeptAnswer>();
  const held = new Map<string, string>();
  const answers = {
    kept,
    held,
    failNextKeep: false,
    async claim(key: string, fingerprint: string): Promise<KeyClaim> {
      const answer = kept.get(key);
      if (answer) return { kind: "kept", answer: structuredClone(answer) };
      const holder = held.get(key);
      if (holder !== undefined) return { kind: "held", fingerprint: holder };
      held.set(key, fingerprint);
      return { kind: "claimed" };
    },
    async keep(key: string, fingerprint: string, envelope: KeptAnswer["envelope"]) {
      if (answers.failNextKeep) {
        answers.failNextKeep = false;
        throw new Error("test: the answer cannot be kept");
      }
      held.delete(key);
      if (!kept.has(key)) kept.set(key, structuredClone({ fingerprint, envelope }));
    },
    async release(key: string) {
      held.delete(key);
    },
  };
  return answers;
}
