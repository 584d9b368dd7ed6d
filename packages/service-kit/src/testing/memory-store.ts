import type { EventDescriptor, PayloadOf } from "@fundraise/protocol";

/** An event a use case emitted, as its transaction committed it. */
export interface Emitted {
  name: string;
  payload: Record<string, unknown>;
}

/** One transaction on a MemoryStore: its own copy of the state. */
export interface MemoryTx<S> {
  state: S;
  emit<D extends EventDescriptor>(event: D, payload: PayloadOf<D>): void;
  /** Claims `consumer`'s message `key` in this transaction: false when it was claimed before. */
  claimOnce(consumer: string, key: string): boolean;
  /** Runs after the transaction, when it does not commit. */
  onRollback(step: () => Promise<void>): void;
}

/**
 * FOR TESTS ONLY: the unit of work under a service's in-memory repository (use-case tests without
 * Postgres). A transaction works on a copy of the state and replaces the state when it resolves; its
 * events then count as published. A throw drops the copy and runs its rollback steps. Transactions run one
 * at a time, which stands for the locks.
 */
export interface MemoryStore<S> {
  /** The committed state (tests seed it and look at it). */
  readonly state: S;
  /** Events of committed transactions, oldest first. */
  readonly events: Emitted[];
  transaction<T>(work: (tx: MemoryTx<S>) => Promise<T>): Promise<T>;
  /** The next transaction's commit fails with `error` (after its work resolved). */
  failNextCommit(error: Error): void;
}

export function createMemoryStore<S>(initial: S, copy: (state: S) => S): MemoryStore<S> {
  let state = initial;
  const events: Emitted[] = [];
  const claims = new Set<string>();
  let queue: Promise<unknown> = Promise.resolve();
  let commitFailure: Error | undefined;

  return {
    get state() {
      return state;
    },
    events,
    failNextCommit(error) {
      commitFailure = error;
    },
    transaction<T>(work: (tx: MemoryTx<S>) => Promise<T>): Promise<T> {
      const run = async () => {
        const tx = { state: copy(state), emitted: [] as Emitted[], claimed: [] as string[] };
        const undo: (() => Promise<void>)[] = [];
        try {
          const result = await work({
            state: tx.state,
            emit: (event, payload) => void tx.emitted.push({ name: event.name, payload }),
            claimOnce(consumer, key) {
              const claim = `${consumer}\n${key}`;
              if (claims.has(claim) || tx.claimed.includes(claim)) return false;
              tx.claimed.push(claim);
              return true;
            },
            onRollback: (step) => void undo.push(step),
          });
          const failure = commitFailure;
          commitFailure = undefined;
          if (failure) throw failure;
          state = tx.state;
          events.push(...tx.emitted);
          for (const claim of tx.claimed) claims.add(claim);
          return result;
        } catch (error) {
          for (const step of undo) await step();
          throw error;
        }
      };
      const next = queue.then(run, run);
      queue = next.catch(() => undefined);
      return next;
    },
  };
}

/** The committed tables `K` of a MemoryStore's state, read live, and its committed events. */
export type Committed<S, K extends keyof S> = { readonly [P in K]: S[P] } & { readonly events: Emitted[] };

/**
 * `repository` with the store's committed events and live views of some committed tables (`keys`): each
 * reads the state as it is when read, since a commit replaces it. For an in-memory repository's tests to
 * look at what was committed.
 */
export function withCommitted<S, K extends keyof S, R extends object>(
  store: MemoryStore<S>,
  keys: readonly K[],
  repository: R,
): R & Committed<S, K> {
  for (const key of keys) {
    Object.defineProperty(repository, key, { get: () => store.state[key], enumerable: true });
  }
  return Object.assign(repository, { events: store.events }) as R & Committed<S, K>;
}
