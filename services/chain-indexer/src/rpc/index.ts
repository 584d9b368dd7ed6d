import type { Bus } from "@fundraise/bus";
import { ChainRpc } from "@fundraise/protocol";
import type { Progress } from "../ops/progress.ts";
import type { ChainReads } from "../reads/chain-reads.ts";

/** The chain indexer's RPC surface: each descriptor straight to its read (rules in reads/). */
export async function serveChainRpc(bus: Bus, reads: ChainReads, progress: Progress): Promise<void> {
  await bus.serve(ChainRpc.evaluationLogs, () => reads.evaluationLogs());
  await bus.serve(ChainRpc.registerLogs, () => reads.registerLogs());
  await bus.serve(ChainRpc.whitelistInsertLogs, ({ address }) => reads.whitelistInsertLogs(address));
  await bus.serve(ChainRpc.whitelistRemoveLogs, ({ address }) => reads.whitelistRemoveLogs(address));
  await bus.serve(ChainRpc.whitelisted, ({ address }) => reads.whitelisted(address));
  await bus.serve(ChainRpc.role, ({ address }) => reads.role(address));
  await bus.serve(ChainRpc.auctionByHash, ({ fileHash }) => reads.auctionByHash(fileHash));
  await bus.serve(ChainRpc.evaluation, ({ fileHash }) => reads.evaluation(fileHash));
  await bus.serve(ChainRpc.progress, async () => ({
    chainId: progress.chainId,
    indexedBlock: await reads.indexedBlock(),
    headBlock: progress.headBlock,
  }));
}
