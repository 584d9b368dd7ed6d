import { waitForReceipt } from "@fundraise/contracts";
import { ContractFactory, type Provider, type Signer } from "ethers";
import solc from "solc";

/**
 * A minimal EIP-1271 contract wallet for tests: it says a signature is valid when `ecrecover` of the hash
 * gives its owner (an EOA). Compiled here with the npm solc (solc-js, offline), like packages/contracts.
 */
const SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract OwnedWallet {
    address public immutable owner;

    constructor(address owner_) {
        owner = owner_;
    }

    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        if (signature.length != 65) return 0xffffffff;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        return ecrecover(hash, v, r, s) == owner ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }
}
`;

interface Compiled {
  abi: unknown[];
  bytecode: string;
}

let compiled: Compiled | undefined;

function compile(): Compiled {
  if (compiled) return compiled;
  const input = {
    language: "Solidity",
    sources: { "OwnedWallet.sol": { content: SOURCE } },
    settings: {
      evmVersion: "cancun",
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
  };
  const failures = (output.errors ?? []).filter((e) => e.severity === "error");
  if (failures.length > 0) throw new Error(failures.map((e) => e.formattedMessage).join("\n"));
  const contract = output.contracts["OwnedWallet.sol"]?.OwnedWallet;
  if (!contract) throw new Error("OwnedWallet missing from solc output");
  compiled = { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` };
  return compiled;
}

/** Deploys a wallet owned by `owner`, paid by `deployer`; returns its address. */
export async function deployContractWallet(
  deployer: Signer,
  provider: Provider,
  owner: string,
): Promise<string> {
  const { abi, bytecode } = compile();
  const factory = new ContractFactory(abi as never, bytecode, deployer);
  const wallet = await factory.deploy(owner);
  const sent = wallet.deploymentTransaction();
  if (!sent) throw new Error("no deployment transaction");
  // ethers' wait() may wait for a next block that an idle anvil never mines (hence `waitForReceipt` of packages/contracts).
  const receipt = await waitForReceipt(provider, sent.hash);
  if (!receipt.contractAddress) throw new Error("no contract address in the receipt");
  return receipt.contractAddress;
}
