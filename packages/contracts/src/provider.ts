import { JsonRpcProvider, type Provider, type TransactionReceipt } from "ethers";
import { createChainClient } from "./chain-client.ts";

/**
 * A provider tuned for a known chain: no network detection retries, no request batching (which adds a stall
 * per call) and no response cache (which hides fresh blocks right after a transaction).
 */
export function createProvider(url: string, chainId: number): JsonRpcProvider {
  const provider = new JsonRpcProvider(url, chainId, {
    staticNetwork: true,
    batchMaxCount: 1,
    cacheTimeout: -1,
  });
  provider.pollingInterval = 50;
  return provider;
}

/** Reads the chain id with one JSON-RPC call (before a provider exists). */
export async function fetchChainId(url: string, timeoutMs = 5_000): Promise<number> {
  const client = createChainClient({ url, timeoutMs });
  try {
    return await client.chainId();
  } finally {
    client.close();
  }
}

/**
 * Polls for a transaction's receipt. ethers' `wait()` falls back to waiting for new blocks when the first
 * receipt check comes back empty; an idle anvil mines no further block, and such a wait was seen to hang.
 */
export async function waitForReceipt(
  provider: Provider,
  hash: string,
  options: { timeoutMs?: number; maxIntervalMs?: number } = {},
): Promise<TransactionReceipt> {
  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  const maxInterval = options.maxIntervalMs ?? 1_000;
  for (let interval = 5; ; interval = Math.min(interval * 2, maxInterval)) {
    const receipt = await provider.getTransactionReceipt(hash);
    if (receipt) return receipt;
    if (Date.now() > deadline) throw new Error(`no receipt for transaction ${hash} in time`);
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}
