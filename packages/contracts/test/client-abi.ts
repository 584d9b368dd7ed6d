// The views the first implementation's web client reads, in that implementation's own ABI. The client bundles
// its compiled ABI and calls our deployed contracts with it, so every fragment here must answer, and decode,
// on our contracts. Transcribed from its `ProjectRegister`, `Maestro` and `UpgradeableAuctions/*` sources.
import { type BaseContractMethod, Contract, type ContractRunner, Interface, type Result } from "ethers";
import type { AuctionType } from "../src/auction-types.ts";

export const clientRegistryAbi = [
  "function projectsRegistered(bytes32) view returns (uint256 approved, uint256 rejected, address proposer, bool finalized, bool decision)",
  "function statusList(address) view returns (uint8)",
  "function threshold() view returns (uint256)",
  "function whitelistedCount() view returns (uint256)",
];

const surface =
  "tuple(address auction, string tokenName, string tokenSymbol, string auctionType, bytes32 projectHash)";

export const clientFactoryAbi = [
  "function projectTokens(bytes32) view returns (address proposer, address token, address auction, string auctionType)",
  `function getProjectSurfaceByStatus(bytes32[] hashes, uint8 status, uint256 selectCount, bool ignore) view returns (${surface}[])`,
  `function getAllAuctionsByHashList(bytes32[] hashes) view returns (${surface}[])`,
];

type ClientContract<Names extends string> = Contract & Record<Names, BaseContractMethod>;

export function clientRegistryAt(address: string, runner: ContractRunner) {
  return new Contract(address, clientRegistryAbi, runner) as ClientContract<
    "projectsRegistered" | "statusList" | "threshold" | "whitelistedCount"
  >;
}

export function clientFactoryAt(address: string, runner: ContractRunner) {
  return new Contract(address, clientFactoryAbi, runner) as ClientContract<
    "projectTokens" | "getProjectSurfaceByStatus" | "getAllAuctionsByHashList"
  >;
}

/** What the project page reads from any auction, through the capped base type's ABI (in a try/catch). */
export const clientCappedAbi = ["function numberOfTokensToBeDistributed() view returns (uint256)"];

type Getter = readonly [name: string, output: string];

const base: Getter[] = [
  ["DEFAULT_ADMIN_ROLE", "bytes32"],
  ["PROPOSER_ADMIN_ROLE", "bytes32"],
  ["PROPOSER_ROLE", "bytes32"],
  ["bidCoin", "address"],
  ["getStatus", "uint8"],
  ["latestEndTime", "uint256"],
  ["projectWallet", "address"],
  ["startTime", "uint256"],
  ["status", "uint8"],
  ["totalDepositedSucoins", "uint256"],
];
const capped: Getter[] = [
  ...base,
  ["numberOfTokensToBeDistributed", "uint256"],
  ["projectToken", "address"],
  ["soldProjectTokens", "uint256"],
];
const fcfs: Getter[] = [
  ...capped,
  ["currentRate", "uint256"],
  ["getCurrentRate", "uint256"],
  ["rate", "uint256"],
];
const dutch: Getter[] = [...fcfs, ["finalRate", "uint256"]];

/**
 * Every zero-argument view of each original auction type's ABI (own, inherited, and OpenZeppelin's
 * `DEFAULT_ADMIN_ROLE`): the auction page multicalls all of them in one call, so one missing getter fails it.
 */
export const clientAuctionGetters: Record<AuctionType, readonly Getter[]> = {
  UncappedAuction: [
    ...base,
    ["MINTER_ROLE", "bytes32"],
    ["numberOfTokensToBeDistributed", "uint256"],
    ["projectToken", "address"],
    ["rate", "uint256"],
    ["soldProjectTokens", "uint256"],
  ],
  PseudoCappedAuction: [
    ...capped,
    ["currentRate", "uint256"],
    ["fundLimitPerUser", "uint256"],
    ["getCurrentRate", "uint256"],
  ],
  FCFSAuction: fcfs,
  OBFCFSAuction: [...fcfs, ["fundLimitPerUser", "uint256"]],
  DutchAuction: dutch,
  StrictDutchAuction: [...dutch, ["getTotalSupply", "uint256"], ["initTokens", "uint256"]],
  OBDutchAuction: [
    ...capped,
    ["currentRate", "uint256"],
    ["fundLimitPerUser", "uint256"],
    ["getCurrentRate", "uint256"],
    ["minPrice", "uint256"],
    ["proposerWallet", "address"],
  ],
};

/**
 * The auction page's read (its `getAllPublicVariables`): encodes every zero-argument getter, sends them in
 * one `multicall` as an eth_call, and decodes each answer with the original output types.
 */
export async function readAllGetters(
  address: string,
  type: AuctionType,
  runner: ContractRunner,
): Promise<Record<string, Result>> {
  const getters = clientAuctionGetters[type];
  const iface = new Interface(getters.map(([name, output]) => `function ${name}() view returns (${output})`));
  const auction = new Contract(
    address,
    ["function multicall(bytes[] data) returns (bytes[] results)"],
    runner,
  );
  const calls = getters.map(([name]) => iface.encodeFunctionData(name));
  const results = (await auction.getFunction("multicall").staticCall(calls)) as string[];
  return Object.fromEntries(
    getters.map(([name], i) => [name, iface.decodeFunctionResult(name, results[i]!)]),
  );
}
