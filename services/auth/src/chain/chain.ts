import { ADMIN_ROLE, type ChainRole, type Deployment, registryAt, roleOf } from "@fundraise/contracts";
import { ErrorCode, errors } from "@fundraise/protocol";
import { Contract, FetchRequest, isError, JsonRpcProvider } from "ethers";
import type { ContractWalletChecker } from "../signatures/signature.ts";
import { EIP1271_MAGIC_VALUE } from "../signatures/signature.ts";

/** What sign-in reads from the chain: the platform role of an address, and contract-wallet signatures. */
export interface ChainReader extends ContractWalletChecker {
  readonly chainId: number;
  /** Admin if the address holds the registry's admin role, else from its user status (behaviour.md §5). */
  roleOf(address: string): Promise<ChainRole>;
  /** The chain id the endpoint reports (start-up check against the deployment file). */
  fetchChainId(): Promise<number>;
  close(): void;
}

const ERC1271_ABI = ["function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)"];

/**
 * The chain behind a JSON-RPC endpoint, for the deployment in the deployment file. Each request is
 * bounded by `timeoutMs`; any transport failure becomes `unavailable`/CHAIN_UNAVAILABLE (503), so a login
 * never hangs on a dead node and never issues a token with a role it could not check.
 */
export function createChainReader(options: {
  url: string;
  deployment: Deployment;
  timeoutMs: number;
}): ChainReader {
  const request = new FetchRequest(options.url);
  request.timeout = options.timeoutMs;
  // Same tuning as @fundraise/contracts' createProvider (known chain, no batching, no cache), plus a timeout.
  const provider = new JsonRpcProvider(request, options.deployment.chainId, {
    staticNetwork: true,
    batchMaxCount: 1,
    cacheTimeout: -1,
  });
  const registry = registryAt(options.deployment.registry, provider);

  const unavailable = (cause: unknown) =>
    errors.unavailable(
      ErrorCode.CHAIN_UNAVAILABLE,
      "The blockchain cannot be reached right now; try again.",
      {
        cause,
      },
    );

  return {
    chainId: options.deployment.chainId,
    async roleOf(address) {
      try {
        const [isAdmin, status] = await Promise.all([
          registry.hasRole(ADMIN_ROLE, address) as Promise<boolean>,
          registry.statusList(address) as Promise<bigint>,
        ]);
        return roleOf(status, isAdmin);
      } catch (cause) {
        throw unavailable(cause);
      }
    },
    async fetchChainId() {
      return Number(BigInt((await provider.send("eth_chainId", [])) as string));
    },
    async hasCode(address) {
      try {
        return (await provider.getCode(address)) !== "0x";
      } catch (cause) {
        throw unavailable(cause);
      }
    },
    async isValidSignature(address, hash, signature) {
      const wallet = new Contract(address, ERC1271_ABI, provider);
      try {
        const answer = (await wallet.getFunction("isValidSignature").staticCall(hash, signature)) as string;
        return answer.toLowerCase() === EIP1271_MAGIC_VALUE;
      } catch (cause) {
        // A revert or an undecodable answer is the contract saying no; anything else is the chain failing.
        if (isError(cause, "CALL_EXCEPTION") || isError(cause, "BAD_DATA")) return false;
        throw unavailable(cause);
      }
    },
    close() {
      provider.destroy();
    },
  };
}
