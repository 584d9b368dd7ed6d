/**
 * `pnpm bench:indexer`: the chain indexer's figures (issue 10), printed, not asserted.
 *
 * 1. Backfill: 20,000 Register events in 200 blocks on a fresh anvil, indexed by a fresh indexer process
 *    from the deployment's start block: events/s with the process start, and from the moment it took the
 *    writer lock.
 * 2. Head lag: a transaction whitelisting a fresh address is mined; how long until the gateway's
 *    `GET /EventDebug/Whitelisted/{address}` answers true (median and p99 over 20 rounds).
 *
 *   pnpm bench:indexer [-- --events 20000 --blocks 200 --rounds 20 --poll 10]
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createTestVhost } from "@fundraise/bus/testing";
import { registryAt, UserStatus, waitForReceipt } from "@fundraise/contracts";
import { createTestDatabase } from "@fundraise/service-kit/testing";
import { Wallet } from "ethers";
import pg from "pg";
import { freePort, serviceNodeArgs, stopProcess } from "../scripts/lib/processes.ts";
import { spawnIndexer } from "../services/chain-indexer/src/test/child.ts";
import { indexedBlock, registerMany, startChain } from "../services/chain-indexer/src/test/harness.ts";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    events: { type: "string", default: "20000" },
    blocks: { type: "string", default: "200" },
    rounds: { type: "string", default: "20" },
    poll: { type: "string", default: "10" },
  },
});
const events = Number(values.events);
const blocks = Number(values.blocks);
const rounds = Number(values.rounds);
const pollMs = values.poll;
const root = join(import.meta.dirname, "..");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

const chain = await startChain();
const [db, vhost] = await Promise.all([
  createTestDatabase("bench_indexer"),
  createTestVhost("bench_indexer"),
]);
const sql = new pg.Pool({ connectionString: db.url, max: 2 });
const children: ChildProcess[] = [];
try {
  process.stdout.write(`registering ${events} projects in ${blocks} blocks... `);
  await registerMany(chain, events, Math.ceil(events / blocks), "bench");
  const head = await chain.provider.getBlockNumber();
  console.log(`done (head block ${head})`);

  // 1. Backfill, by a process started now.
  const env = {
    DATABASE_URL: db.url,
    AMQP_URL: vhost.url,
    CHAIN_RPC_URL: chain.anvil.url,
    CHAIN_DEPLOYMENT_FILE: chain.deploymentFile,
    CHAIN_POLL_INTERVAL_MS: pollMs,
  };
  const started = performance.now();
  const indexer = spawnIndexer(env);
  children.push(indexer.child);
  let lockedAt: number | undefined;
  while ((await indexedBlock(sql)) < head) {
    if (lockedAt === undefined && indexer.messages.includes("writer lock taken; indexing")) {
      lockedAt = performance.now();
    }
    await sleep(10);
  }
  const done = performance.now();
  const { rows } = await sql.query<{ n: number }>(
    "select count(*)::int as n from chain_indexer.log where event = 'Register'",
  );
  const indexed = rows[0]!.n;
  const total = (done - started) / 1000;
  const running = (done - (lockedAt ?? started)) / 1000;
  console.log(`\nBackfill of ${indexed} Register events in ${blocks} blocks (default range limits)`);
  console.log(`  with process start: ${total.toFixed(2)} s   ${(indexed / total).toFixed(0)} events/s`);
  console.log(`  once running:       ${running.toFixed(2)} s   ${(indexed / running).toFixed(0)} events/s`);

  // The facts go out through the outbox relay after their ranges commit; measure the lag once they are out.
  const unpublished = async () =>
    (
      await sql.query<{ n: number }>(
        "select count(*)::int as n from chain_indexer.outbox where published_at is null",
      )
    ).rows[0]!.n;
  while ((await unpublished()) > 0) await sleep(50);
  const published = (performance.now() - started) / 1000;
  console.log(`  every fact on the bus (outbox relay): ${published.toFixed(2)} s after the process start`);

  // 2. Head lag through the gateway.
  const port = await freePort();
  const gateway = spawn(process.execPath, serviceNodeArgs("gateway"), {
    cwd: root,
    env: {
      ...process.env,
      ...env,
      LOG_LEVEL: "warn",
      PORT: String(port),
      METRICS_PORT: "0",
      REDIS_PREFIX: `bench:${randomBytes(4).toString("hex")}:`,
      RATE_LIMIT_PER_MINUTE: "100000000",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  children.push(gateway);
  const whitelisted = async (address: string) => {
    const res = await fetch(`http://127.0.0.1:${port}/EventDebug/Whitelisted/${address}`).catch(
      () => undefined,
    );
    if (!res?.ok) return undefined;
    return ((await res.json()) as { data: boolean }).data;
  };
  const probe = Wallet.createRandom().address;
  for (let until = Date.now() + 60_000; (await whitelisted(probe)) === undefined; await sleep(100)) {
    if (Date.now() > until) throw new Error("the gateway did not answer Whitelisted within 60 s");
  }
  const registry = registryAt(chain.deployment.registry, chain.signers[0]!);
  const lags: number[] = [];
  const indexLags: number[] = [];
  const mining: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const address = Wallet.createRandom().address;
    const tx = await registry.editUserStatus(address, UserStatus.Whitelisted);
    const sent = performance.now();
    // The node has mined the block once it gives the receipt (polled every few ms: a slight under-estimate).
    const { blockNumber: block } = await waitForReceipt(chain.provider, tx.hash, { maxIntervalMs: 2 });
    const mined = performance.now();
    mining.push(mined - sent);
    while ((await indexedBlock(sql)) < block) await sleep(1);
    indexLags.push(performance.now() - mined);
    while ((await whitelisted(address)) !== true) await sleep(2);
    lags.push(performance.now() - mined);
  }
  lags.sort((a, b) => a - b);
  indexLags.sort((a, b) => a - b);
  mining.sort((a, b) => a - b);
  // The read path alone: the same request for an address whose answer no longer changes.
  const reads: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t = performance.now();
    await whitelisted(probe);
    reads.push(performance.now() - t);
  }
  reads.sort((a, b) => a - b);
  console.log(
    `\nHead lag, mined transaction → Whitelisted true through the gateway (${rounds} rounds, poll ${pollMs} ms)`,
  );
  console.log(`  median ${percentile(lags, 50).toFixed(1)} ms   p99 ${percentile(lags, 99).toFixed(1)} ms`);
  console.log(
    `  of which mined → committed in the index (cursor): median ${percentile(indexLags, 50).toFixed(1)} ms   ` +
      `p99 ${percentile(indexLags, 99).toFixed(1)} ms`,
  );
  console.log(
    `  (before that, eth_sendRawTransaction answered → receipt available: median ${percentile(mining, 50).toFixed(1)} ms)`,
  );
  console.log(
    `  one Whitelisted request alone (gateway → RabbitMQ → indexer → Postgres): median ` +
      `${percentile(reads, 50).toFixed(1)} ms   p99 ${percentile(reads, 99).toFixed(1)} ms`,
  );
} finally {
  await Promise.all(children.map((child) => stopProcess(child)));
  await sql.end();
  await Promise.all([db.dispose(), vhost.dispose()]);
  await chain.stop();
}
