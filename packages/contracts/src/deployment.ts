import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { getAddress } from "ethers";

/** The deployment file the deploy script writes and the services read. Addresses are EIP-55 checksummed. */
export type Deployment = {
  chainId: number;
  registry: string;
  factory: string;
  bidCoin: string;
  /** Block of the first contract deployed: where an indexer starts. */
  startBlock: number;
  /** ISO-8601 UTC time the deployment finished. */
  deployedAt: string;
};

/** Validates a parsed deployment record; throws naming the first bad field. */
export function parseDeployment(value: unknown, origin = "deployment"): Deployment {
  if (typeof value !== "object" || value === null) throw new Error(`${origin}: not an object`);
  const record = value as Record<string, unknown>;
  const integer = (key: string): number => {
    const field = record[key];
    if (typeof field !== "number" || !Number.isSafeInteger(field) || field < 0) {
      throw new Error(`${origin}: ${key} must be a non-negative integer`);
    }
    return field;
  };
  const address = (key: string): string => {
    const field = record[key];
    try {
      if (typeof field !== "string") throw new Error("not a string");
      return getAddress(field);
    } catch {
      throw new Error(`${origin}: ${key} must be an address`);
    }
  };
  const deployedAt = record.deployedAt;
  if (typeof deployedAt !== "string" || Number.isNaN(Date.parse(deployedAt))) {
    throw new Error(`${origin}: deployedAt must be an ISO-8601 time`);
  }
  return {
    chainId: integer("chainId"),
    registry: address("registry"),
    factory: address("factory"),
    bidCoin: address("bidCoin"),
    startBlock: integer("startBlock"),
    deployedAt,
  };
}

/** Reads and validates a deployment file written by `pnpm --filter @fundraise/contracts run deploy`. */
export function loadDeployment(file: string): Deployment {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new Error(`cannot read deployment file ${file}: ${(err as Error).message}`, { cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`deployment file ${file} is not JSON`, { cause: err });
  }
  return parseDeployment(json, file);
}

export function writeDeployment(file: string, deployment: Deployment): void {
  mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  writeFileSync(file, `${JSON.stringify(deployment, null, 2)}\n`);
}
