import type { LiveEntry, LiveLog } from "../live/log.ts";

/**
 * FOR TESTS ONLY: the live log in memory (the RabbitMQ stream's stand-in for gateway tests): `append`
 * is a publish; `read` replays the kept entries from an offset, then waits `idleMs` for more.
 */
export interface MemoryLiveLog extends LiveLog {
  append(routingKey: string, payload: unknown, messageId?: string): Promise<LiveEntry>;
  /** Drops entries before `offset` (retention). */
  truncate(offset: number): void;
}

export function createMemoryLiveLog(): MemoryLiveLog {
  const entries: LiveEntry[] = [];
  let next = 0;
  let position: number | null = null;
  let follower: ((entries: LiveEntry[]) => Promise<void>) | undefined;
  let chain: Promise<void> = Promise.resolve();
  const waiters = new Set<() => void>();

  return {
    get position() {
      return position;
    },
    async start(onEntries) {
      follower = onEntries;
      position = entries.at(-1)?.offset ?? null;
    },
    append(routingKey, payload, messageId) {
      const entry = { offset: next++, routingKey, messageId, payload };
      entries.push(entry);
      for (const wake of waiters) wake();
      if (!follower) return Promise.resolve(entry);
      const handle = follower;
      chain = chain.then(async () => {
        position = entry.offset;
        await handle([entry]);
      });
      return chain.then(() => entry);
    },
    truncate(offset) {
      while (entries.length > 0 && entries[0]!.offset < offset) entries.shift();
    },
    async read(from, each, { signal, idleMs }) {
      let at = from;
      while (!signal.aborted) {
        const batch = entries.filter((e) => e.offset >= at);
        if (batch.length > 0) {
          at = batch.at(-1)!.offset + 1;
          if (!(await each(batch))) return;
          continue;
        }
        const arrived = await new Promise<boolean>((resolve) => {
          const wake = () => {
            clearTimeout(timer);
            waiters.delete(wake);
            resolve(true);
          };
          const timer = setTimeout(() => {
            waiters.delete(wake);
            resolve(false);
          }, idleMs);
          waiters.add(wake);
        });
        if (!arrived) return;
      }
    },
    async close() {
      follower = undefined;
    },
  };
}
