import { type BaseContract, type BaseContractMethod, Contract, type ContractRunner } from "ethers";
import { type AuctionType, auctionAbiByType } from "./auction-types.ts";
import { auctionAbi } from "./generated/auction.ts";
import { auctionFactoryAbi } from "./generated/auction-factory.ts";
import { bidCoinAbi } from "./generated/bid-coin.ts";
import { projectRegistryAbi } from "./generated/project-registry.ts";
import { projectTokenAbi } from "./generated/project-token.ts";
import { testStablecoinAbi } from "./generated/test-stablecoin.ts";

type Runner = ContractRunner | null | undefined;

/** Function names declared in a const ABI. */
export type AbiFunctionName<Abi extends readonly unknown[]> = Abi[number] extends infer Item
  ? Item extends { readonly type: "function"; readonly name: infer Name extends string }
    ? Name
    : never
  : never;

/**
 * An ethers contract whose method names are checked against its ABI (arguments and results stay untyped).
 * Overloaded names (the order-book Dutch `bid`) need `getFunction("bid(uint256,uint256)")`.
 */
export type TypedContract<Abi extends readonly unknown[]> = BaseContract & {
  readonly [Name in AbiFunctionName<Abi>]: BaseContractMethod;
};

export type RegistryContract = TypedContract<typeof projectRegistryAbi>;
export type FactoryContract = TypedContract<typeof auctionFactoryAbi>;
export type BidCoinContract = TypedContract<typeof bidCoinAbi>;
export type StablecoinContract = TypedContract<typeof testStablecoinAbi>;
export type ProjectTokenContract = TypedContract<typeof projectTokenAbi>;
export type AuctionContract<Type extends AuctionType | undefined = undefined> = TypedContract<
  Type extends AuctionType ? (typeof auctionAbiByType)[Type] : typeof auctionAbi
>;

function typed<Abi extends readonly unknown[]>(
  address: string,
  abi: Abi,
  runner: Runner,
): TypedContract<Abi> {
  return new Contract(address, abi as unknown as readonly string[], runner) as unknown as TypedContract<Abi>;
}

export function registryAt(address: string, runner?: Runner): RegistryContract {
  return typed(address, projectRegistryAbi, runner);
}

export function factoryAt(address: string, runner?: Runner): FactoryContract {
  return typed(address, auctionFactoryAbi, runner);
}

export function bidCoinAt(address: string, runner?: Runner): BidCoinContract {
  return typed(address, bidCoinAbi, runner);
}

/** The local stand-in stablecoin behind the bid coin (see `bidCoin.underlying()`). */
export function stablecoinAt(address: string, runner?: Runner): StablecoinContract {
  return typed(address, testStablecoinAbi, runner);
}

export function projectTokenAt(address: string, runner?: Runner): ProjectTokenContract {
  return typed(address, projectTokenAbi, runner);
}

/** An auction with its type's full ABI, or with the ABI all types share when the type is not given. */
export function auctionAt<Type extends AuctionType | undefined = undefined>(
  address: string,
  runner?: Runner,
  type?: Type,
): AuctionContract<Type> {
  const abi = type === undefined ? auctionAbi : auctionAbiByType[type as AuctionType];
  return typed(address, abi, runner) as unknown as AuctionContract<Type>;
}

/** The same contract object bound to another signer, keeping its method typing. */
export function withRunner<C extends BaseContract>(contract: C, runner: ContractRunner): C {
  return contract.connect(runner) as C;
}
