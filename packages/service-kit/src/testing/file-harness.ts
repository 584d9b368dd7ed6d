import { afterAll, beforeAll } from "vitest";

/**
 * The harness of one test file: started before its tests (`beforeAll`) and stopped after them (`afterAll`).
 * Answers at once a view that reads through to the started harness (its getters included); reading it
 * before the harness started throws.
 */
export function harnessOfFile<H extends { stop(): Promise<void> }>(start: () => Promise<H>): H {
  let started: H | undefined;
  beforeAll(async () => {
    started = await start();
  });
  afterAll(() => started?.stop());
  return new Proxy({} as H, {
    get(_, key) {
      if (!started) throw new Error(`the test harness is not started yet (reading ${String(key)})`);
      return Reflect.get(started, key);
    },
  });
}
