import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "@fundraise/bus/testing";
import {
  type Deployment,
  factoryAt,
  registryAt,
  UserStatus,
  waitForReceipt,
  writeDeployment,
} from "@fundraise/contracts";
import { type AnvilInstance, deployFresh, startAnvil } from "@fundraise/contracts/testing";
import { ChainEvents } from "@fundraise/protocol";
import type { Logger } from "@fundraise/service-kit";
import {
  type HarnessService,
  type ServiceHarness,
  startServiceHarness,
} from "@fundraise/service-kit/testing";
import { type ContractTransactionResponse, id, type JsonRpcProvider, type Wallet } from "ethers";
import type pg from "pg";
import { startChainIndexerApp } from "../app.ts";
import { loadConfig } from "../config.ts";

/** A fresh chain with the platform deployed, and its deployment file. */
export interface TestChain {
  anvil: AnvilInstance;
  deployment: Deployment;
  deploymentFile: string;
  provider: JsonRpcProvider;
  signers: Wallet[];
  stop(): Promise<void>;
}

export async function startChain(): Promise<TestChain> {
  const anvil = await startAnvil();
  const { deployment, provider, signers } = await deployFresh(anvil.url);
  const deploymentFile = join(mkdtempSync(join(tmpdir(), "chain-indexer-")), "deployment.json");
  writeDeployment(deploymentFile, deployment);
  return {
    anvil,
    deployment,
    deploymentFile,
    provider,
    signers,
    async stop() {
      provider.destroy();
      await anvil.stop();
    },
  };
}

/** The indexer's environment for a chain, fast polling; `extra` overrides. */
export const chainEnv = (chain: TestChain, extra: Record<string, string> = {}) => ({
  CHAIN_RPC_URL: chain.anvil.url,
  CHAIN_DEPLOYMENT_FILE: chain.deploymentFile,
  CHAIN_POLL_INTERVAL_MS: "20",
  ...extra,
});

/** The indexer as a harness service; with `log`, it logs there instead of the harness's logger. */
export const chainIndexerService = (env: Record<string, string>, log?: Logger): HarnessService => ({
  name: "chain-indexer",
  start: ({ env: base, ...deps }) =>
    startChainIndexerApp({ config: loadConfig({ ...base, ...env }), ...deps, ...(log ? { log } : {}) }),
});

/** The indexer in a harness of its own database and vhost, recording every chain fact. */
export function startHarness(
  label: string,
  env: Record<string, string>,
  log?: Logger,
): Promise<ServiceHarness> {
  return startServiceHarness({
    label: `chain_${label}`,
    services: [chainIndexerService({ REDIS_PREFIX: testRedisPrefix(), ...env }, log)],
    record: ChainEvents,
  });
}

/** The block the index reaches (-1 before its first range). */
export async function indexedBlock(sql: pg.Pool): Promise<number> {
  const { rows } = await sql
    .query<{ n: string }>("select block_number as n from chain_indexer.cursor")
    .catch(() => ({ rows: [] as { n: string }[] }));
  return rows[0] ? Number(rows[0].n) : -1;
}

/** Waits until the index reaches the chain's current head. */
export async function waitIndexed(sql: pg.Pool, chain: TestChain, timeoutMs = 20_000): Promise<number> {
  const head = await chain.provider.getBlockNumber();
  await waitFor(async () => (await indexedBlock(sql)) >= head, timeoutMs, `indexed up to block ${head}`);
  return head;
}

/** Every fact the indexer committed to publish: `name payload-json`, in outbox order. */
export async function outboxFacts(sql: pg.Pool): Promise<string[]> {
  const { rows } = await sql.query<{ event_name: string; payload: string }>(
    "select event_name, convert_from(payload, 'UTF8') as payload from chain_indexer.outbox order by seq",
  );
  return rows.map((r) => `${r.event_name} ${r.payload}`);
}

/** Stored logs as `event tx:logIndex@block`, in chain order. */
export async function storedLogs(sql: pg.Pool): Promise<string[]> {
  const { rows } = await sql.query<{
    event: string;
    tx_hash: string;
    log_index: number;
    block_number: string;
  }>(
    "select event, tx_hash, log_index, block_number from chain_indexer.log order by block_number, log_index",
  );
  return rows.map((r) => `${r.event} ${r.tx_hash}:${r.log_index}@${r.block_number}`);
}

export const send = async (pending: Promise<ContractTransactionResponse>, provider: JsonRpcProvider) =>
  waitForReceipt(provider, (await pending).hash);

export const projectHash = (label: string) => id(`project:${label}`);

/**
 * `count` Register transactions, `perBlock` in each mined block: signed offline and sent in JSON-RPC
 * batches with automine off, so thousands of events take seconds.
 */
export async function registerMany(chain: TestChain, count: number, perBlock: number, label = "bulk") {
  const registry = registryAt(chain.deployment.registry, chain.signers[0]!);
  // Account 4 is the tests' blacklisted one (a blacklisted address cannot register).
  const senders = chain.signers.filter((_, i) => i !== 4);
  const nonces = await Promise.all(senders.map((s) => chain.provider.getTransactionCount(s.address)));
  await chain.provider.send("evm_setAutomine", [false]);
  try {
    for (let start = 0; start < count; start += perBlock) {
      const raws: string[] = [];
      for (let i = start; i < Math.min(count, start + perBlock); i++) {
        const s = i % senders.length;
        raws.push(
          await senders[s]!.signTransaction({
            to: chain.deployment.registry,
            data: registry.interface.encodeFunctionData("registerProject", [projectHash(`${label}-${i}`)]),
            nonce: nonces[s]!++,
            gasLimit: 80_000,
            maxFeePerGas: 10_000_000_000n,
            maxPriorityFeePerGas: 1n,
            chainId: chain.deployment.chainId,
            type: 2,
          }),
        );
      }
      const body = raws.map((raw, i) => ({
        jsonrpc: "2.0",
        id: i,
        method: "eth_sendRawTransaction",
        params: [raw],
      }));
      const answers = (await (
        await fetch(chain.anvil.url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        })
      ).json()) as { error?: unknown }[];
      const failed = answers.find((a) => a.error);
      if (failed) throw new Error(`eth_sendRawTransaction failed: ${JSON.stringify(failed.error)}`);
      await chain.provider.send("evm_mine", []);
    }
  } finally {
    await chain.provider.send("evm_setAutomine", [true]);
  }
}

/** Sets an address's status on the registry (the deployer is admin). */
export async function setStatus(chain: TestChain, address: string, status: keyof typeof UserStatus) {
  const registry = registryAt(chain.deployment.registry, chain.signers[0]!);
  return send(registry.editUserStatus(address, UserStatus[status]), chain.provider);
}

export { factoryAt, registryAt };

/**
 * A Redis key prefix of its own for one index (one database): every local anvil is chain 31337, and
 * two indexes must never share their chain-read cache.
 */
export const testRedisPrefix = () => `test:chain:${randomBytes(4).toString("hex")}:`;
