import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { auctionAt, factoryAt, registryAt } from "@fundraise/contracts";
import { ChainEvents, ChainRpc, ErrorCode } from "@fundraise/protocol";
import { createProcessMetrics } from "@fundraise/service-kit";
import { expectAppError, type ServiceHarness } from "@fundraise/service-kit/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChainIndexerApp } from "./app.ts";
import {
  outboxFacts,
  projectHash,
  registerMany,
  send,
  setStatus,
  startChain,
  startHarness,
  storedLogs,
  type TestChain,
  testRedisPrefix,
  waitIndexed,
} from "./test/harness.ts";

const E18 = 10n ** 18n;
const BULK = 2_000;
const PER_BLOCK = 50;
/** The proxy refuses any eth_getLogs wider than this many blocks, as hosted providers do. */
const PROXY_MAX_RANGE = 7;

let chain: TestChain;
const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
const redisPrefix = testRedisPrefix();
let proxy: Server;
let refused = 0;
let h: ServiceHarness;
let approved: string;
let auction: string;
let token: string;

/** A JSON-RPC proxy in front of anvil that refuses wide log queries ("query returned more than 10000 results"). */
async function startRefusingProxy(target: string): Promise<string> {
  proxy = createServer((req, res) => {
    // A request cut short (the indexer closing mid-call) or anvil gone at the end: drop that connection.
    relay(req, res).catch(() => res.destroy());
  });
  async function relay(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
      id: number;
      method: string;
      params: [{ fromBlock: string; toBlock: string }];
    };
    if (!Array.isArray(body) && body.method === "eth_getLogs") {
      const { fromBlock, toBlock } = body.params[0];
      if (Number(toBlock) - Number(fromBlock) + 1 > PROXY_MAX_RANGE) {
        refused += 1;
        res.setHeader("content-type", "application/json");
        res.end(
          JSON.stringify({
            jsonrpc: "2.0",
            id: body.id,
            error: { code: -32005, message: "query returned more than 10000 results" },
          }),
        );
        return;
      }
    }
    const answer = await fetch(target, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    res.setHeader("content-type", "application/json");
    res.end(await answer.text());
  }
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  chain = await startChain();
  const [admin, v1, v2, v3, blacklisted, viewer, proposer] = chain.signers as [
    (typeof chain.signers)[number],
    ...(typeof chain.signers)[number][],
  ];
  for (const voter of [v1!, v2!, v3!]) await setStatus(chain, voter.address, "Whitelisted");
  await setStatus(chain, blacklisted!.address, "Blacklisted");
  await setStatus(chain, viewer!.address, "Viewer");
  await setStatus(chain, v3!.address, "Default");
  // A project approved by two of the whitelisted voters, its token, an auction created and started.
  approved = projectHash("approved");
  await send(registryAt(chain.deployment.registry, proposer!).registerProject(approved), chain.provider);
  for (const voter of [v1!, v2!]) {
    await send(registryAt(chain.deployment.registry, voter).voteProposal(approved, true), chain.provider);
  }
  const factory = factoryAt(chain.deployment.factory, proposer!);
  await send(factory.createToken(approved, "Approved token", "APR", 1_000n * E18), chain.provider);
  await send(factory.createAuction(approved, "FCFSAuction", [100n * E18, E18, 0n, 0n]), chain.provider);
  const record = await factory.projectTokens(approved);
  auction = record.auction as string;
  token = record.token as string;
  await send(auctionAt(auction, proposer!, "FCFSAuction").startAuction(3600), chain.provider);
  void admin;
  await registerMany(chain, BULK, PER_BLOCK);

  const url = await startRefusingProxy(chain.anvil.url);
  h = await startHarness("backfill", {
    CHAIN_RPC_URL: url,
    CHAIN_DEPLOYMENT_FILE: chain.deploymentFile,
    CHAIN_POLL_INTERVAL_MS: "20",
    CHAIN_LOG_RANGE_MAX: "64",
    REDIS_PREFIX: redisPrefix,
  });
  await waitIndexed(h.sql, chain, 60_000);
}, 120_000);

afterAll(async () => {
  redis.disconnect();
  await h?.stop();
  await new Promise((resolve) => proxy?.close(resolve));
  await chain?.stop();
});

describe("backfill", () => {
  it("stores every followed log once, through a provider that refuses wide ranges (ranges shrink)", async () => {
    expect(refused).toBeGreaterThan(0);
    const logs = await storedLogs(h.sql);
    expect(new Set(logs).size).toBe(logs.length);
    const count = (event: string) => logs.filter((l) => l.startsWith(`${event} `)).length;
    expect(count("Register")).toBe(BULK + 1);
    expect(count("UserStatusChanged")).toBe(6);
    expect(count("WhitelistInsert")).toBe(3);
    expect(count("WhitelistRemove")).toBe(1);
    expect(count("Vote")).toBe(2);
    expect(count("ProjectEvaluation")).toBe(1);
    expect(count("TokenCreation")).toBe(1);
    expect(count("CreateAuctionEvent")).toBe(1);
    // The auction was discovered from its creation and its own logs indexed.
    expect(count("AuctionStarted")).toBe(1);
    expect(count("AdminChange")).toBe(1);
  });

  it("owes exactly one fact per fact-producing log, each with its chain position", async () => {
    const facts = await outboxFacts(h.sql);
    expect(new Set(facts).size).toBe(facts.length);
    const named = (event: { name: string }) => facts.filter((f) => f.startsWith(`${event.name} `));
    expect(named(ChainEvents.projectRegistered)).toHaveLength(BULK + 1);
    expect(named(ChainEvents.projectEvaluated)).toHaveLength(1);
    expect(named(ChainEvents.auctionCreated)).toHaveLength(1);
    expect(named(ChainEvents.tokenCreated)).toHaveLength(1);
    expect(named(ChainEvents.auctionStatusChanged)).toHaveLength(1);
    // Six status changes and the deployer's admin grant.
    expect(named(ChainEvents.userStatusChanged)).toHaveLength(7);
    const evaluated = JSON.parse(named(ChainEvents.projectEvaluated)[0]!.split(" ").slice(1).join(" "));
    expect(evaluated).toMatchObject({ projectHash: approved, isApproved: true });
    expect(evaluated.origin).toMatchObject({ chainId: 31337, logIndex: expect.any(Number) });
    expect(evaluated.origin.blockTimestamp).toBeGreaterThan(0);
  });

  // 2,001 facts through the outbox, each publish confirmed: ~10 s alone, twice that beside the rest of the
  // suite on two cores. The wait is for the condition, with room for a busy machine.
  it("publishes the facts on the bus", { timeout: 150_000 }, async () => {
    await expect
      .poll(() => h.events.filter((e) => e.name === ChainEvents.projectRegistered.name).length, {
        timeout: 120_000,
      })
      .toBe(BULK + 1);
    const status = h.events.find(
      (e) => e.name === ChainEvents.auctionStatusChanged.name && e.payload.auction === auction,
    );
    expect(status?.payload).toMatchObject({ projectHash: approved, status: "Running" });
  });
});

describe("reads", () => {
  const addressOf = (i: number) => () => chain.signers[i]!.address;
  const [v1, v3, blacklisted, viewer] = [addressOf(1), addressOf(3), addressOf(4), addressOf(5)];

  it("answers Whitelisted, the chain role and the whitelist logs of an address, with how far it indexed", async () => {
    const whitelisted = async (address: string) =>
      (await h.client.call(ChainRpc.whitelisted, { address })).whitelisted;
    const role = async (address: string) => (await h.client.call(ChainRpc.role, { address })).role;
    expect(await whitelisted(v1())).toBe(true);
    expect(await whitelisted(v3())).toBe(false);
    expect(await whitelisted(v1().toLowerCase())).toBe(true);
    expect(await role(chain.signers[0]!.address)).toBe("Admin");
    expect(await role(blacklisted())).toBe("Blacklist");
    expect(await role(viewer())).toBe("Viewer");
    expect(await role(v3())).toBe("Base");
    await waitIndexed(h.sql, chain);
    const head = await chain.provider.getBlockNumber();
    expect((await h.client.call(ChainRpc.whitelisted, { address: v1() })).indexedBlock).toBe(head);
    expect((await h.client.call(ChainRpc.role, { address: v1() })).indexedBlock).toBe(head);
    const insertsAnswer = await h.client.call(ChainRpc.whitelistInsertLogs, { address: v3() });
    expect(insertsAnswer.indexedBlock).toBe(head);
    const inserts = insertsAnswer.logs;
    const removes = (await h.client.call(ChainRpc.whitelistRemoveLogs, { address: v3() })).logs;
    expect(inserts).toHaveLength(1);
    expect(removes).toHaveLength(1);
    expect(inserts[0]).toEqual({
      event: { user: v3() },
      log: {
        address: chain.deployment.registry,
        blockHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        blockNumber: expect.any(Number),
        transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        transactionIndex: 0,
        logIndex: expect.any(Number),
        removed: false,
      },
    });
  });

  it("answers the evaluation logs in rules.md §5.2's format and the evaluation of a hash", async () => {
    const { logs, indexedBlock } = await h.client.call(ChainRpc.evaluationLogs, {});
    expect(indexedBlock).toBeGreaterThanOrEqual(logs[0]!.log.blockNumber);
    expect(logs.map((l) => l.event)).toEqual([{ projectHash: approved, isApproved: true }]);
    const evaluation = await h.client.call(ChainRpc.evaluation, {
      fileHash: approved.slice(2).toUpperCase(),
    });
    expect(evaluation.isApproved).toBe(true);
    expect(evaluation.indexedBlock).toBeGreaterThanOrEqual(logs[0]!.log.blockNumber);
    expect((await h.client.call(ChainRpc.registerLogs, {})).logs).toHaveLength(BULK + 1);
  });

  it("answers the auction of a project hash: address, type, token, proposer, created and started", async () => {
    const answer = await h.client.call(ChainRpc.auctionByHash, { fileHash: approved });
    expect(answer).toMatchObject({
      project: {
        proposerAddress: chain.signers[6]!.address,
        tokenAddress: token,
        auctionAddress: auction,
        auctionType: "FCFSAuction",
      },
      isAuctionCreated: true,
      isAuctionStarted: true,
      auctionStatus: "Running",
    });
    expect(answer.indexedBlock).toBeGreaterThan(0);
  });

  it("answers unknown hashes and addresses with null or false, never an error", async () => {
    const unknown = projectHash("never registered");
    expect(await h.client.call(ChainRpc.evaluation, { fileHash: unknown })).toMatchObject({
      isApproved: null,
    });
    expect(await h.client.call(ChainRpc.auctionByHash, { fileHash: unknown })).toMatchObject({
      project: { proposerAddress: null, tokenAddress: null, auctionAddress: null, auctionType: null },
      isAuctionCreated: false,
      isAuctionStarted: false,
      auctionStatus: null,
    });
    const nobody = "0x000000000000000000000000000000000000dEaD";
    expect(await h.client.call(ChainRpc.whitelisted, { address: nobody })).toMatchObject({
      whitelisted: false,
    });
    expect(await h.client.call(ChainRpc.whitelistInsertLogs, { address: nobody })).toMatchObject({
      logs: [],
    });
  });

  it("refuses malformed addresses and hashes as validation errors (400)", async () => {
    const badChecksum = v1().replace(/[a-f]/, (c) => c.toUpperCase());
    for (const address of ["0x123", "hello", badChecksum === v1() ? "0xZZ" : badChecksum]) {
      await expectAppError(
        h.client.call(ChainRpc.whitelisted, { address }),
        "validation",
        ErrorCode.VALIDATION_FAILED,
      );
    }
    await expectAppError(
      h.client.call(ChainRpc.role, { address: "0x" }),
      "validation",
      ErrorCode.VALIDATION_FAILED,
    );
    await expectAppError(
      h.client.call(ChainRpc.evaluation, { fileHash: "0x1234" }),
      "validation",
      ErrorCode.VALIDATION_FAILED,
    );
  });

  it("says how far it has indexed", async () => {
    const progress = await h.client.call(ChainRpc.progress, {});
    const head = await chain.provider.getBlockNumber();
    expect(progress).toEqual({ chainId: 31337, indexedBlock: head, headBlock: head, headFromNode: true });
    const app = h.apps[0] as ChainIndexerApp;
    expect(app.readiness().ready).toBe(true);
    // On /metrics as runService assembles it: the process's registry, then the indexer's own lines.
    const scrape = createProcessMetrics();
    const bus = h.buses.find((b) => b.service === "chain-indexer");
    scrape.setSources({
      text: () => app.metrics(),
      ...(bus ? { queues: (ms: number) => bus.inspectQueues(ms) } : {}),
      ...(app.outbox?.backlog ? { outbox: app.outbox.backlog } : {}),
    });
    const text = await scrape.scrape();
    expect(text).toContain(`chain_indexer_indexed_block{chain_id="31337"} ${head}`);
    expect(text).toContain(`chain_indexer_head_block{chain_id="31337"} ${head}`);
    expect(text).toMatch(/^outbox_backlog_events\{schema="[a-z_]+"\} \d+$/m);
    expect(text).toContain('bus_queue_consumers{queue="chain.rpc"} 1');
  });
});

describe("following the head", () => {
  it("indexes a new transaction within moments", async () => {
    const address = chain.signers[7]!.address;
    expect(await h.client.call(ChainRpc.whitelisted, { address })).toMatchObject({ whitelisted: false });
    // The answer is kept in Redis for the next reader (reads/hot-keys.ts)...
    const answers = `${redisPrefix}chain:31337:answers`;
    await expect.poll(() => redis.hget(answers, `whitelisted:${address}`)).not.toBeNull();
    const { blockNumber } = await setStatus(chain, address, "Whitelisted");
    // A client waits for its own transaction: the answer that says its block is indexed says the change.
    let answer = await h.client.call(ChainRpc.whitelisted, { address });
    await expect
      .poll(
        async () => {
          answer = await h.client.call(ChainRpc.whitelisted, { address });
          return answer.indexedBlock >= blockNumber;
        },
        { timeout: 5_000, interval: 20 },
      )
      .toBe(true);
    expect(answer.whitelisted).toBe(true);
    // ...and the commit of the change replaced it: Redis holds the new answer, or none yet.
    expect(String(await redis.hget(answers, `whitelisted:${address}`))).not.toContain('"whitelisted":false');
  });
});

describe("the head an admin's change is dated by (rules.md §7.1)", () => {
  it("is the node's head when asked, not the one the indexer last saw (indexing stopped, blocks mined)", async () => {
    const app = h.apps[0] as ChainIndexerApp;
    await app.closeIntake?.();
    const before = await h.client.call(ChainRpc.progress, {});
    for (let i = 0; i < 3; i++) await chain.provider.send("evm_mine", []);
    const head = await chain.provider.getBlockNumber();
    const progress = await h.client.call(ChainRpc.progress, {});
    expect(progress).toMatchObject({ headBlock: head, headFromNode: true });
    expect(head).toBe(before.headBlock + 3);
    // Nothing was indexed meanwhile: the head came from the node.
    expect(progress.indexedBlock).toBe(before.indexedBlock);
  });
});
