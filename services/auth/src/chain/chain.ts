import {
  ADMIN_ROLE,
  type ChainClient,
  type ChainRole,
  type Deployment,
  registryAt,
  roleOf,
} from "@fundraise/contracts";
import { ErrorCode, errors } from "@fundraise/protocol";
import { Contract, isError } from "ethers";
import type { ContractWalletChecker } from "../signatures/signature.ts";
import { EIP1271_MAGIC_VALUE } from "../signatures/signature.ts";

/** What sign-in reads from the chain: the platform role of an address, and contract-wallet signatures. */
export interface ChainReader extends ContractWalletChecker {
  readonly chainId: number;
  /** Admin if the address holds the registry's admin role, else from its user status (rules.md §5.3). */
  roleOf(address: string): Promise<ChainRole>;
}

const ERC1271_ABI = ["function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)"];

/**
 * The chain behind the shared JSON-RPC client (its timeout bounds each request), for the deployment in the
 * deployment file. Any transport failure becomes `unavailable`/CHAIN_UNAVAILABLE (503), so a login never
 * hangs on a dead node and never issues a token with a role it could not check.
 */
export function createChainReader(client: ChainClient, deployment: Deployment): ChainReader {
  const provider = client.provider(deployment.chainId);
  const registry = registryAt(deployment.registry, provider);

  const unavailable = (cause: unknown) =>
    errors.unavailable(
      ErrorCode.CHAIN_UNAVAILABLE,
      "The blockchain cannot be reached right now; try again.",
      {
        cause,
      },
    );

  // The role read of every sign-in: both calls in one JSON-RPC batch, their call data built by hand.
  const hasRole = registry.interface.getFunction("hasRole")?.selector as string;
  const statusList = registry.interface.getFunction("statusList")?.selector as string;
  const call = (data: string) => ({
    method: "eth_call",
    params: [{ to: deployment.registry, data }, "latest"],
  });

  return {
    chainId: deployment.chainId,
    async roleOf(address) {
      const word = addressWord(address);
      try {
        const [isAdmin, status] = (
          await client.batch([call(`${hasRole}${ADMIN_ROLE.slice(2)}${word}`), call(`${statusList}${word}`)])
        ).map(oneWord);
        return roleOf(BigInt(status as string), BigInt(isAdmin as string) !== 0n);
      } catch (cause) {
        throw unavailable(cause);
      }
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
  };
}

/** An address as one 32-byte ABI word (no 0x): what a call's arguments are made of. */
function addressWord(address: string): string {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) throw new Error(`not an address: ${address}`);
  return address.slice(2).toLowerCase().padStart(64, "0");
}

/** An eth_call result that must be one 32-byte word (`0x` + 64 hex digits). */
function oneWord(result: unknown): string {
  if (typeof result !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(result)) {
    throw new Error(`not one word: ${JSON.stringify(result)}`);
  }
  return result;
}
