import {
  type ContractTransactionResponse,
  Interface,
  type InterfaceAbi,
  id,
  type JsonRpcProvider,
  JsonRpcSigner,
  type Log,
  type Result,
  type TransactionReceipt,
  Wallet,
} from "ethers";
import { afterAll, beforeAll, beforeEach, expect } from "vitest";
import type { AuctionType } from "../src/auction-types.ts";
import {
  type AuctionContract,
  auctionAt,
  type BidCoinContract,
  bidCoinAt,
  type FactoryContract,
  factoryAt,
  type ProjectTokenContract,
  projectTokenAt,
  type RegistryContract,
  registryAt,
  type StablecoinContract,
  stablecoinAt,
  withRunner,
} from "../src/contracts.ts";
import { confirm } from "../src/deploy.ts";
import type { Deployment } from "../src/deployment.ts";
import * as generated from "../src/generated/index.ts";
import { UserStatus } from "../src/roles.ts";
import {
  type AnvilInstance,
  deployFresh,
  revertTo,
  setNextBlockTimestamp,
  snapshot,
  startAnvil,
} from "../src/testing.ts";

/** 10**18: one whole token, or one whole bid coin. */
export const E18 = 10n ** 18n;

/** Every error and event of every generated ABI, to decode reverts that bubble up from nested calls. */
const everything = new Interface(
  Object.entries(generated)
    .filter(([name]) => name.endsWith("Abi"))
    .flatMap(([, abi]) =>
      (abi as readonly { type: string }[]).filter((f) => f.type === "error" || f.type === "event"),
    )
    .filter(
      (f, i, all) => all.findIndex((g) => JSON.stringify(g) === JSON.stringify(f)) === i,
    ) as InterfaceAbi,
);

export type Chain = {
  anvil: AnvilInstance;
  provider: JsonRpcProvider;
  deployment: Deployment;
  /** anvil's unlocked accounts (anvil signs, which keeps the tests fast): see `roles` for who is who. */
  signers: JsonRpcSigner[];
  registry: RegistryContract;
  factory: FactoryContract;
  bidCoin: BidCoinContract;
  stablecoin: StablecoinContract;
};

/** Who is who in the tests (anvil account numbers). */
export const roles = {
  admin: 0,
  admin2: 1,
  voters: [2, 3, 4],
  viewer: 5,
  blacklisted: 6,
  proposer: 7,
  bidders: [8, 9, 10, 11, 12],
  extraVoters: [13, 14, 15],
} as const;

export function signer(chain: Chain, index: number): JsonRpcSigner {
  const wallet = chain.signers[index];
  if (!wallet) throw new Error(`no signer #${index}`);
  return wallet;
}

/** The address of anvil account `index`. */
export const addr = (chain: Chain, index: number): string => signer(chain, index).address;

/** keccak256("MINTER_ROLE"): the role that lets an auction mint its project token. */
export const MINTER_ROLE = "0x9f2df0fed2c77648de5860a4cc508cd0818c85b8b8a1ab4ceeef8d981c8956a6";

/**
 * Starts anvil and deploys once per test file (threshold 50%, three whitelisted voters, a viewer and a
 * blacklisted account, bidders funded with 1,000,000 bid coin); every test starts from that state.
 */
export function useChain(): () => Chain {
  let chain: Chain | undefined;
  let snap = "";
  beforeAll(async () => {
    const anvil = await startAnvil({ accounts: 16 });
    const fresh = await deployFresh(anvil.url, {});
    const signers = anvil.accounts.map((key) => new JsonRpcSigner(fresh.provider, new Wallet(key).address));
    const admin = signers[roles.admin]!;
    chain = {
      anvil,
      provider: fresh.provider,
      deployment: fresh.deployment,
      signers,
      registry: registryAt(fresh.deployment.registry, admin),
      factory: factoryAt(fresh.deployment.factory, admin),
      bidCoin: bidCoinAt(fresh.deployment.bidCoin, admin),
      stablecoin: stablecoinAt(await bidCoinAt(fresh.deployment.bidCoin, fresh.provider).underlying(), admin),
    };
    await send(chain.registry.grantRole(await chain.registry.ADMIN_ROLE(), signers[roles.admin2]!.address));
    for (const v of roles.voters)
      await send(chain.registry.editUserStatus(signers[v]!.address, UserStatus.Whitelisted));
    await send(chain.registry.editUserStatus(signers[roles.viewer]!.address, UserStatus.Viewer));
    await send(chain.registry.editUserStatus(signers[roles.blacklisted]!.address, UserStatus.Blacklisted));
    const amount = 1_000_000n * E18;
    await send(chain.stablecoin.mint(admin.address, amount * BigInt(roles.bidders.length)));
    await send(chain.stablecoin.approve(chain.deployment.bidCoin, amount * BigInt(roles.bidders.length)));
    for (const b of roles.bidders) await send(chain.bidCoin.depositFor(signers[b]!.address, amount));
    snap = await snapshot(chain.provider);
  });
  beforeEach(async () => {
    if (!chain) return;
    await revertTo(chain.provider, snap);
    snap = await snapshot(chain.provider);
  });
  afterAll(async () => {
    chain?.provider.destroy();
    await chain?.anvil.stop();
  });
  return () => {
    if (!chain) throw new Error("chain not started");
    return chain;
  };
}

/** Sends a transaction and returns its successful receipt. */
export const send: (pending: Promise<ContractTransactionResponse>) => Promise<TransactionReceipt> = confirm;

/** `signature` tells overloads apart (the two `BidSubmission` forms share `name`). */
export type DecodedEvent = { name: string; signature: string; address: string; args: Result };

/** Events in a receipt decoded with every generated ABI, optionally only those emitted by `address`. */
export function eventsIn(receipt: TransactionReceipt, address?: string): DecodedEvent[] {
  const out: DecodedEvent[] = [];
  for (const log of receipt.logs as Log[]) {
    if (address && log.address.toLowerCase() !== address.toLowerCase()) continue;
    const parsed = everything.parseLog({ topics: [...log.topics], data: log.data });
    if (parsed)
      out.push({ name: parsed.name, signature: parsed.signature, address: log.address, args: parsed.args });
  }
  return out;
}

/**
 * The single event called `name` in the receipt (fails if there is none or more than one); a full signature
 * (`BidSubmission(address,uint256,uint256)`) names one form of an overloaded event.
 */
export function eventIn(receipt: TransactionReceipt, name: string, address?: string): Result {
  const key = (e: DecodedEvent) => (name.includes("(") ? e.signature : e.name);
  const found = eventsIn(receipt, address).filter((e) => key(e) === name);
  expect(found.map(key), `expected exactly one ${name}`).toEqual([name]);
  return found[0]!.args;
}

export function namesIn(receipt: TransactionReceipt, address?: string): string[] {
  return eventsIn(receipt, address).map((e) => e.name);
}

function revertData(err: unknown): string | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 6 && current; depth++) {
    const record = current as { data?: unknown; error?: unknown; info?: { error?: unknown } };
    if (typeof record.data === "string" && record.data.startsWith("0x")) return record.data;
    current = record.error ?? record.info?.error;
  }
  return undefined;
}

/** Awaits a call that must revert with the custom error `name` (and `args`, when given). */
export async function expectRevert(action: Promise<unknown>, name: string, args?: unknown[]): Promise<void> {
  let error: unknown;
  try {
    await action;
  } catch (err) {
    error = err;
  }
  expect(error, `expected revert ${name}`).toBeDefined();
  const data = revertData(error);
  expect(data, `no revert data in ${String(error)}`).toBeDefined();
  const decoded = everything.parseError(data!);
  expect(decoded?.name ?? `unknown error ${data}`).toBe(name);
  if (args) expect([...decoded!.args]).toEqual(args);
}

export function projectHash(label: string): string {
  return id(`project:${label}`);
}

/** Registers `label` by the proposer and has two of the three whitelisted voters approve it. */
export async function approvedProject(chain: Chain, label: string, proposerIndex: number = roles.proposer) {
  const hash = projectHash(label);
  const proposer = signer(chain, proposerIndex);
  await send(withRunner(chain.registry, proposer).registerProject(hash));
  for (const v of roles.voters.slice(0, 2)) {
    await send(withRunner(chain.registry, signer(chain, v)).voteProposal(hash, true));
  }
  return hash;
}

export type LaunchedAuction<T extends AuctionType> = {
  hash: string;
  token: ProjectTokenContract;
  /** Bound to the proposer. */
  auction: AuctionContract<T>;
  address: string;
  createReceipt: TransactionReceipt;
};

export type AuctionParams = { supply?: bigint; rate?: bigint; finalRate?: bigint; limit?: bigint };

/** An approved project with a token (1,000 tokens to the proposer) and a created, not yet started, auction. */
export async function createAuction<T extends AuctionType>(
  chain: Chain,
  type: T,
  params: AuctionParams,
  label: string = type,
): Promise<LaunchedAuction<T>> {
  const hash = await approvedProject(chain, label);
  const proposer = signer(chain, roles.proposer);
  const factory = withRunner(chain.factory, proposer);
  await send(factory.createToken(hash, `${label} token`, "PRJ", 1_000n * E18));
  const createReceipt = await send(
    factory.createAuction(hash, type, [
      params.supply ?? 0n,
      params.rate ?? 0n,
      params.finalRate ?? 0n,
      params.limit ?? 0n,
    ]),
  );
  const record = await chain.factory.projectTokens(hash);
  return {
    hash,
    token: projectTokenAt(record.token as string, proposer),
    auction: auctionAt(record.auction as string, proposer, type),
    address: record.auction as string,
    createReceipt,
  };
}

/** Starts the auction; returns the start timestamp. */
export async function start(chain: Chain, auction: AuctionContract, duration: number): Promise<number> {
  const receipt = await send(auction.startAuction(duration));
  const block = await chain.provider.getBlock(receipt.blockNumber);
  return block!.timestamp;
}

/**
 * Gas for one bid. A bid's gas depends on the second of its block (a price that moved since the last bid
 * is written and announced), so an estimate made in one second runs out of gas in a block of a later one:
 * 192,134 estimated in the start's second, 197,017 ten seconds on (a Dutch auction of the demo). `bid`
 * below keeps the estimate: a bid expected to revert must revert in the estimate, where its reason is.
 */
export const BID_GAS_LIMIT = 400_000n;

/** Approves and bids `amount` from `bidderIndex`, optionally in a block at `timestamp`. */
export async function bid(
  chain: Chain,
  auction: AuctionContract,
  bidderIndex: number,
  amount: bigint,
  options: { at?: number; price?: bigint } = {},
): Promise<TransactionReceipt> {
  const bidder = signer(chain, bidderIndex);
  await send(withRunner(chain.bidCoin, bidder).approve(await auction.getAddress(), amount));
  if (options.at !== undefined) await setNextBlockTimestamp(chain.provider, options.at);
  const bound = withRunner(auction, bidder);
  if (options.price !== undefined)
    return await send(bound.getFunction("bid(uint256,uint256)")(amount, options.price));
  return await send(bound.bid(amount));
}

/** Mines an empty block at `timestamp` so views see that time. */
export async function mineAt(chain: Chain, timestamp: number): Promise<void> {
  await setNextBlockTimestamp(chain.provider, timestamp);
  await chain.provider.send("evm_mine", []);
}
