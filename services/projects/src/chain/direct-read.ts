import {
  auctionAt,
  auctionStatusName,
  createChainClient,
  type Deployment,
  factoryAt,
  loadDeployment,
  registryAt,
} from "@fundraise/contracts";
import { type AuctionStatus, ErrorCode, errors } from "@fundraise/protocol";
import { type JsonRpcApiProvider, ZeroAddress } from "ethers";
import type { AuctionState, ChainIndex, Evaluation } from "../projects/chain.service.ts";

export interface DirectChainRead extends ChainIndex {
  close(): void;
}

/**
 * "Sync now" without the chain-indexer: the registry's and the factory's own views, read at the chain's
 * head. `indexedBlock` is the head block the answer was read at. The deployment file is read on first
 * use, so the service starts (and serves everything else) when no chain is configured; each request goes
 * through the shared chain client (bounded by `timeoutMs`), and any failure is 503 CHAIN_UNAVAILABLE.
 */
export function createDirectChainRead(options: {
  url: string;
  deploymentFile: string;
  timeoutMs: number;
}): DirectChainRead {
  const client = createChainClient(options);
  let chain: { deployment: Deployment; provider: JsonRpcApiProvider } | undefined;

  function connect() {
    if (chain) return chain;
    const deployment = loadDeployment(options.deploymentFile);
    chain = { deployment, provider: client.provider(deployment.chainId) };
    return chain;
  }

  async function read<T>(work: (c: NonNullable<typeof chain>) => Promise<T>): Promise<T> {
    try {
      return await work(connect());
    } catch (cause) {
      throw errors.unavailable(ErrorCode.CHAIN_UNAVAILABLE, "The chain cannot be reached right now.", {
        cause,
      });
    }
  }

  return {
    evaluation: (projectHash) =>
      read(async ({ deployment, provider }): Promise<Evaluation> => {
        const registry = registryAt(deployment.registry, provider);
        const [election, head] = await Promise.all([
          registry.projectsRegistered(projectHash) as Promise<{ finalized: boolean; decision: boolean }>,
          provider.getBlockNumber(),
        ]);
        return { isApproved: election.finalized ? election.decision : null, indexedBlock: head };
      }),

    auction: (projectHash) =>
      read(async ({ deployment, provider }): Promise<AuctionState> => {
        const factory = factoryAt(deployment.factory, provider);
        const head = await provider.getBlockNumber();
        const project = (await factory.projectTokens(projectHash, { blockTag: head })) as {
          proposer: string;
          token: string;
          auction: string;
          auctionType: string;
        };
        const created = project.auction !== ZeroAddress;
        const status: AuctionStatus | null = created
          ? (auctionStatusName(
              Number(await auctionAt(project.auction, provider).getStatus({ blockTag: head })),
            ) as AuctionStatus)
          : null;
        const orNull = (address: string) => (address === ZeroAddress ? null : address);
        return {
          project: {
            proposerAddress: orNull(project.proposer),
            tokenAddress: orNull(project.token),
            auctionAddress: orNull(project.auction),
            auctionType: created ? project.auctionType : null,
          },
          isAuctionCreated: created,
          isAuctionStarted: status !== null && status !== "Off",
          auctionStatus: status,
          indexedBlock: head,
        };
      }),

    close: () => client.close(),
  };
}
