import {
  ContractFactory,
  type ContractTransactionResponse,
  getAddress,
  type InterfaceAbi,
  parseUnits,
  type Signer,
  type TransactionReceipt,
} from "ethers";
import { AUCTION_TYPES, type AuctionType } from "./auction-types.ts";
import { bidCoinAt, registryAt, stablecoinAt } from "./contracts.ts";
import type { Deployment } from "./deployment.ts";
import { auctionFactoryAbi, auctionFactoryBytecode } from "./generated/auction-factory.ts";
import { bidCoinAbi, bidCoinBytecode } from "./generated/bid-coin.ts";
import { dutchAuctionAbi, dutchAuctionBytecode } from "./generated/dutch-auction.ts";
import { fcfsAuctionAbi, fcfsAuctionBytecode } from "./generated/fcfs-auction.ts";
import { obDutchAuctionAbi, obDutchAuctionBytecode } from "./generated/ob-dutch-auction.ts";
import { obFcfsAuctionAbi, obFcfsAuctionBytecode } from "./generated/ob-fcfs-auction.ts";
import { projectRegistryAbi, projectRegistryBytecode } from "./generated/project-registry.ts";
import { projectTokenAbi, projectTokenBytecode } from "./generated/project-token.ts";
import { pseudoCappedAuctionAbi, pseudoCappedAuctionBytecode } from "./generated/pseudo-capped-auction.ts";
import { strictDutchAuctionAbi, strictDutchAuctionBytecode } from "./generated/strict-dutch-auction.ts";
import { testStablecoinAbi, testStablecoinBytecode } from "./generated/test-stablecoin.ts";
import { uncappedAuctionAbi, uncappedAuctionBytecode } from "./generated/uncapped-auction.ts";
import { waitForReceipt } from "./provider.ts";
import { ADMIN_ROLE, UserStatus } from "./roles.ts";

/** Addresses to give roles to (and fund) right after deployment, for local and demo chains. */
export type DemoSetup = {
  admins?: readonly string[];
  whitelisted?: readonly string[];
  viewers?: readonly string[];
  blacklisted?: readonly string[];
  /** Each receives `fundAmount` bid coin and as much of the underlying stablecoin. */
  funded?: readonly string[];
  /** Base units; default 10,000 whole coins. */
  fundAmount?: bigint;
};

export type DeployOptions = {
  /** Voting threshold percentage, 0-99; default 50. */
  threshold?: number;
  /** Existing ERC20 to wrap as the bid coin; default: deploy the `TestStablecoin` stand-in. */
  underlying?: string;
  bidCoinName?: string;
  bidCoinSymbol?: string;
  /** Roles and balances to set up after deploying (the stand-in stablecoin is needed for funding). */
  demo?: DemoSetup;
  log?: (line: string) => void;
};

const implementations: Record<AuctionType, { abi: InterfaceAbi; bytecode: string }> = {
  UncappedAuction: { abi: uncappedAuctionAbi, bytecode: uncappedAuctionBytecode },
  PseudoCappedAuction: { abi: pseudoCappedAuctionAbi, bytecode: pseudoCappedAuctionBytecode },
  OBFCFSAuction: { abi: obFcfsAuctionAbi, bytecode: obFcfsAuctionBytecode },
  FCFSAuction: { abi: fcfsAuctionAbi, bytecode: fcfsAuctionBytecode },
  DutchAuction: { abi: dutchAuctionAbi, bytecode: dutchAuctionBytecode },
  OBDutchAuction: { abi: obDutchAuctionAbi, bytecode: obDutchAuctionBytecode },
  StrictDutchAuction: { abi: strictDutchAuctionAbi, bytecode: strictDutchAuctionBytecode },
};

async function deployContract(
  signer: Signer,
  nonce: number,
  abi: InterfaceAbi,
  bytecode: string,
  args: unknown[] = [],
): Promise<{ address: string; blockNumber: number }> {
  const contract = await new ContractFactory(abi, bytecode, signer).deploy(...args, { nonce });
  const sent = contract.deploymentTransaction();
  if (!sent) throw new Error("no deployment transaction");
  const receipt = await waitForReceipt(sent.provider, sent.hash);
  if (receipt.status !== 1) throw new Error("contract deployment failed");
  return { address: getAddress(await contract.getAddress()), blockNumber: receipt.blockNumber };
}

/** Sends a transaction and waits for a successful receipt. */
export async function confirm(pending: Promise<ContractTransactionResponse>): Promise<TransactionReceipt> {
  const sent = await pending;
  const receipt = await waitForReceipt(sent.provider, sent.hash);
  if (receipt.status !== 1) throw new Error(`transaction ${sent.hash} failed`);
  return receipt;
}

/**
 * Deploys the registry, the bid coin (and a stand-in stablecoin unless `underlying` is given), the token and
 * auction implementations and the factory, then applies `options.demo`. The signer becomes the registry's
 * first admin and the owner of the stand-in stablecoin.
 */
export async function deployPlatform(signer: Signer, options: DeployOptions = {}): Promise<Deployment> {
  const provider = signer.provider;
  if (!provider) throw new Error("deployPlatform needs a signer connected to a provider");
  // One transaction at a time with explicit nonces: addresses depend only on the deployer's nonce, so a
  // fresh chain always gets the same ones. (Sent together, out-of-order nonces could sit in anvil's
  // queue under load; a dozen sequential deployments cost well under a second locally.)
  let nonce = await signer.getNonce("pending");
  const log = options.log ?? (() => {});
  const threshold = options.threshold ?? 50;
  const { chainId } = await provider.getNetwork();

  const registry = await deployContract(signer, nonce++, projectRegistryAbi, projectRegistryBytecode, [
    threshold,
  ]);
  const stable =
    options.underlying === undefined
      ? await deployContract(signer, nonce++, testStablecoinAbi, testStablecoinBytecode, [
          "Test Lira",
          "tTRY",
          18,
        ])
      : undefined;
  const token = await deployContract(signer, nonce++, projectTokenAbi, projectTokenBytecode);
  const auctionImplementations: { address: string; blockNumber: number }[] = [];
  for (const type of AUCTION_TYPES) {
    auctionImplementations.push(
      await deployContract(signer, nonce++, implementations[type].abi, implementations[type].bytecode),
    );
  }
  if (!registry || !token) throw new Error("deployment incomplete");
  const underlying = options.underlying ?? stable?.address;
  if (underlying === undefined) throw new Error("no underlying stablecoin");
  log(`ProjectRegistry ${registry.address} (threshold ${threshold}%)`);
  if (stable) log(`TestStablecoin ${stable.address}`);
  log(`ProjectToken implementation ${token.address}`);
  for (const [i, type] of AUCTION_TYPES.entries()) {
    log(`${type} implementation ${auctionImplementations[i]?.address}`);
  }

  // The factory checks that the implementations have code, so it waits for them; the bid coin need not.
  const bidCoin = await deployContract(signer, nonce++, bidCoinAbi, bidCoinBytecode, [
    underlying,
    options.bidCoinName ?? "SUCoin",
    options.bidCoinSymbol ?? "SUC",
  ]);
  log(`BidCoin ${bidCoin.address} wrapping ${underlying}`);
  const factory = await deployContract(signer, nonce++, auctionFactoryAbi, auctionFactoryBytecode, [
    registry.address,
    bidCoin.address,
    token.address,
    [...AUCTION_TYPES],
    auctionImplementations.map((d) => d?.address),
  ]);
  log(`AuctionFactory ${factory.address}`);

  const blocks = [registry, stable, token, bidCoin, factory, ...auctionImplementations].flatMap((d) =>
    d ? [d.blockNumber] : [],
  );
  const deployment: Deployment = {
    chainId: Number(chainId),
    registry: registry.address,
    factory: factory.address,
    bidCoin: bidCoin.address,
    startBlock: Math.min(...blocks),
    deployedAt: new Date().toISOString(),
  };
  if (options.demo) await setupDemo(signer, deployment, options.demo, log);
  return deployment;
}

/** Grants roles and statuses and funds accounts; the signer must be a registry admin (and stablecoin owner). */
export async function setupDemo(
  signer: Signer,
  deployment: Deployment,
  demo: DemoSetup,
  log: (line: string) => void = () => {},
): Promise<void> {
  const registry = registryAt(deployment.registry, signer);
  for (const admin of demo.admins ?? []) await confirm(registry.grantRole(ADMIN_ROLE, admin));
  const statuses: [readonly string[] | undefined, number][] = [
    [demo.whitelisted, UserStatus.Whitelisted],
    [demo.viewers, UserStatus.Viewer],
    [demo.blacklisted, UserStatus.Blacklisted],
  ];
  for (const [addresses, status] of statuses) {
    for (const address of addresses ?? []) await confirm(registry.editUserStatus(address, status));
  }
  const funded = demo.funded ?? [];
  if (funded.length > 0) {
    const amount = demo.fundAmount ?? parseUnits("10000", 18);
    const bidCoin = bidCoinAt(deployment.bidCoin, signer);
    const stable = stablecoinAt(await bidCoin.getFunction("underlying")(), signer);
    const self = await signer.getAddress();
    await confirm(stable.mint(self, amount * BigInt(funded.length) * 2n));
    await confirm(stable.approve(deployment.bidCoin, amount * BigInt(funded.length)));
    for (const account of funded) {
      await confirm(bidCoin.depositFor(account, amount));
      await confirm(stable.transfer(account, amount));
    }
  }
  log(
    `demo: ${demo.admins?.length ?? 0} extra admins, ${demo.whitelisted?.length ?? 0} whitelisted, ` +
      `${demo.viewers?.length ?? 0} viewers, ${demo.blacklisted?.length ?? 0} blacklisted, ${funded.length} funded`,
  );
}

/**
 * The demo roles for anvil's default accounts: #0 deploys and is admin, #1 is a second admin, #2-#4 are
 * whitelisted voters, #5 a viewer, #6 blacklisted, #7-#9 stay Base; #1-#9 all get bid coin.
 */
export function anvilDemoSetup(addresses: readonly string[]): DemoSetup {
  const pick = (from: number, to: number) => addresses.slice(from, to + 1);
  return {
    admins: pick(1, 1),
    whitelisted: pick(2, 4),
    viewers: pick(5, 5),
    blacklisted: pick(6, 6),
    funded: pick(1, 9),
  };
}
