/** The head `chain.index.progress` answers, and where it came from. */
export interface Head {
  headBlock: number;
  /** true: the node's head, read when asked; false: the head the indexer last polled (it lags). */
  headFromNode: boolean;
}

/**
 * The node's head as it is now (rules.md §7.1: an admin's role change is dated by it), within `timeoutMs`.
 * A node that does not answer in time, fails, or answers below the head already polled (one behind a load
 * balancer can) is not trusted: the polled head, marked as such.
 */
export async function headNow(
  nodeHead: () => Promise<number>,
  polledHead: number,
  timeoutMs: number,
): Promise<Head> {
  const polled: Head = { headBlock: polledHead, headFromNode: false };
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Head>((resolve) => {
    timer = setTimeout(() => resolve(polled), timeoutMs);
  });
  const read = nodeHead().then(
    (block): Head => (block >= polledHead ? { headBlock: block, headFromNode: true } : polled),
    () => polled,
  );
  try {
    return await Promise.race([read, late]);
  } finally {
    clearTimeout(timer);
  }
}
