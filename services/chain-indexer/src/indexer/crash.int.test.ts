import { createTestVhost, type TestVhost, waitFor } from "@fundraise/bus/testing";
import { createTestDatabase, type TestDatabase } from "@fundraise/service-kit/testing";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { spawnIndexer } from "../test/child.ts";
import {
  chainEnv,
  indexedBlock,
  outboxFacts,
  registerMany,
  setStatus,
  startChain,
  storedLogs,
  type TestChain,
  testRedisPrefix,
  waitIndexed,
} from "../test/harness.ts";

let chain: TestChain;
const resources: { db: TestDatabase; vhost: TestVhost; sql: pg.Pool }[] = [];

/** A database and vhost of its own, for one run of the indexer. */
async function place(label: string) {
  const [db, vhost] = await Promise.all([createTestDatabase(label), createTestVhost(label)]);
  const sql = new pg.Pool({ connectionString: db.url, max: 2 });
  resources.push({ db, vhost, sql });
  const env = chainEnv(chain, {
    DATABASE_URL: db.url,
    AMQP_URL: vhost.url,
    CHAIN_LOG_RANGE_MAX: "1",
    REDIS_PREFIX: testRedisPrefix(),
  });
  return { sql, env };
}

beforeAll(async () => {
  chain = await startChain();
  await registerMany(chain, 2_400, 40, "crash");
}, 60_000);

afterAll(async () => {
  for (const r of resources) {
    await r.sql.end();
    await Promise.all([r.db.dispose(), r.vhost.dispose()]);
  }
  await chain?.stop();
});

it("kill -9 mid-backfill and mid-follow, again and again: the same rows and facts as an undisturbed run", async () => {
  const head = await chain.provider.getBlockNumber();
  const crashed = await place("crash_killed");
  const calm = await place("crash_calm");
  const undisturbed = spawnIndexer(calm.env);

  // Backfill, killed three times at growing cursors.
  const killedAt: number[] = [];
  for (const fraction of [0.25, 0.5, 0.75]) {
    const victim = spawnIndexer(crashed.env);
    const mark = Math.floor(head * fraction);
    await waitFor(async () => (await indexedBlock(crashed.sql)) >= mark, 30_000, `cursor past ${mark}`);
    await victim.kill();
    killedAt.push(await indexedBlock(crashed.sql));
  }
  // Each kill fell in the middle of the backfill.
  expect(killedAt.every((block) => block < head)).toBe(true);
  let survivor = spawnIndexer(crashed.env);
  await waitIndexed(crashed.sql, chain, 30_000);

  // Following the head: transactions keep coming while the indexer is killed and restarted.
  const toggled = chain.signers.slice(1, 4);
  for (let round = 0; round < 3; round++) {
    for (const signer of toggled)
      await setStatus(chain, signer.address, round % 2 === 0 ? "Whitelisted" : "Viewer");
    await survivor.kill();
    await setStatus(chain, chain.signers[5]!.address, round % 2 === 0 ? "Viewer" : "Whitelisted");
    survivor = spawnIndexer(crashed.env);
  }
  await waitIndexed(crashed.sql, chain, 30_000);
  await waitIndexed(calm.sql, chain, 30_000);
  await survivor.stop();
  await undisturbed.stop();

  const logs = await storedLogs(crashed.sql);
  expect(logs.filter((l) => l.startsWith("Register ")).length).toBe(2_400);
  expect(logs).toEqual(await storedLogs(calm.sql));
  const facts = await outboxFacts(crashed.sql);
  expect(new Set(facts).size).toBe(facts.length);
  expect(facts).toEqual(await outboxFacts(calm.sql));
  // Eight indexer processes start, seven in turn: on a loaded CI machine, under tsx, that took over 30 s.
}, 120_000);

// Two indexer processes start from the sources one after the other: on a loaded machine that alone can take
// most of a minute, so the test's budget is its conditions' own, not the project's 30 s.
it("one writer at a time: a second instance waits as hot standby and takes over when the first is killed", async () => {
  const { sql, env } = await place("crash_standby");
  const first = spawnIndexer(env);
  await first.said("writer lock taken; indexing");
  await waitIndexed(sql, chain, 30_000);
  const second = spawnIndexer(env);
  await second.said("another instance is writing; waiting as hot standby");
  await second.said("chain-indexer ready");

  await first.kill();
  await second.said("writer lock taken; indexing", 30_000);
  const receipt = await setStatus(chain, chain.signers[6]!.address, "Blacklisted");
  await waitFor(async () => (await indexedBlock(sql)) >= receipt.blockNumber, 30_000, "the standby indexes");
  await second.stop();
  const logs = await storedLogs(sql);
  expect(new Set(logs).size).toBe(logs.length);
}, 120_000);
