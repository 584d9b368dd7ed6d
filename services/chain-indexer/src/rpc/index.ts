import type { Bus } from "@fundraise/bus";
import { ChainRpc } from "@fundraise/protocol";
import type { Progress } from "../ops/progress.ts";
import type { ChainReads } from "../reads/chain-reads.ts";
import { headNow } from "./head.ts";

/** How long `progress` waits for the node's head before it answers the head it saw last. */
const HEAD_READ_MS = 300;

/**
 * The chain indexer's RPC surface: each descriptor straight to its read (rules in reads/).
 * `progress` answers the node's head as it is now (`nodeHead`), not the one the indexer last polled: an
 * admin's role change is dated by it (rules.md §7.1), so a block whose receipt a client held before the
 * change must be at or under it, and a block beyond it was mined after, however far the indexer's polling
 * lags. The node silent: the head last seen, marked as such (`headFromNode: false`).
 */
export async function serveChainRpc(
  bus: Bus,
  reads: ChainReads,
  progress: Progress,
  nodeHead: () => Promise<number>,
): Promise<void> {
  await bus.serve(ChainRpc.evaluationLogs, () => reads.evaluationLogs());
  await bus.serve(ChainRpc.registerLogs, () => reads.registerLogs());
  await bus.serve(ChainRpc.whitelistInsertLogs, ({ address }) => reads.whitelistInsertLogs(address));
  await bus.serve(ChainRpc.whitelistRemoveLogs, ({ address }) => reads.whitelistRemoveLogs(address));
  await bus.serve(ChainRpc.whitelisted, ({ address }) => reads.whitelisted(address));
  await bus.serve(ChainRpc.role, ({ address }) => reads.role(address));
  await bus.serve(ChainRpc.auctionByHash, ({ fileHash }) => reads.auctionByHash(fileHash));
  await bus.serve(ChainRpc.evaluation, ({ fileHash }) => reads.evaluation(fileHash));
  await bus.serve(ChainRpc.progress, async () => {
    const [indexedBlock, head] = await Promise.all([
      reads.indexedBlock(),
      headNow(nodeHead, progress.headBlock, HEAD_READ_MS),
    ]);
    return { chainId: progress.chainId, indexedBlock, ...head };
  });
}
