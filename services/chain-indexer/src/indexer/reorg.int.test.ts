import { registryAt } from "@fundraise/contracts";
import { revertTo, snapshot } from "@fundraise/contracts/testing";
import { ChainEvents, ChainRpc } from "@fundraise/protocol";
import type { ServiceHarness } from "@fundraise/service-kit/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  chainEnv,
  outboxFacts,
  projectHash,
  send,
  setStatus,
  startChain,
  startHarness,
  type TestChain,
  waitIndexed,
} from "../test/harness.ts";

let chain: TestChain;
let h: ServiceHarness;

beforeAll(async () => {
  chain = await startChain();
  h = await startHarness("reorg", chainEnv(chain, { CHAIN_CONFIRMATIONS: "0" }));
});

afterAll(async () => {
  await h?.stop();
  await chain?.stop();
});

it("a reorg that removes an evaluation and a whitelisting retracts their facts and their reads", async () => {
  const [, v1, v2, newcomer, proposer] = chain.signers;
  await setStatus(chain, v1!.address, "Whitelisted");
  await setStatus(chain, v2!.address, "Whitelisted");
  const hash = projectHash("reorged");
  await send(registryAt(chain.deployment.registry, proposer!).registerProject(hash), chain.provider);
  await waitIndexed(h.sql, chain);
  const fork = await snapshot(chain.provider);

  // The branch that will vanish: the project is approved and a newcomer whitelisted.
  for (const voter of [v1!, v2!]) {
    await send(registryAt(chain.deployment.registry, voter).voteProposal(hash, true), chain.provider);
  }
  const whitelisting = await setStatus(chain, newcomer!.address, "Whitelisted");
  await waitIndexed(h.sql, chain);
  expect(await h.client.call(ChainRpc.evaluation, { fileHash: hash })).toMatchObject({ isApproved: true });
  expect(await h.client.call(ChainRpc.whitelisted, { address: newcomer!.address })).toMatchObject({
    whitelisted: true,
  });
  const evaluated = (await h.client.call(ChainRpc.evaluationLogs, {})).logs[0]!;

  // Another branch from the fork point, longer than the first, without those transactions.
  await revertTo(chain.provider, fork);
  await chain.provider.send("anvil_mine", ["0x5"]);
  const head = await chain.provider.getBlock("latest");
  await expect
    .poll(async () => (await h.client.call(ChainRpc.progress, {})).indexedBlock, { timeout: 10_000 })
    .toBe(head!.number);

  expect(await h.client.call(ChainRpc.evaluation, { fileHash: hash })).toMatchObject({ isApproved: null });
  expect(await h.client.call(ChainRpc.whitelisted, { address: newcomer!.address })).toEqual({
    whitelisted: false,
    indexedBlock: head!.number,
  });
  expect(await h.client.call(ChainRpc.evaluationLogs, {})).toEqual({ logs: [], indexedBlock: head!.number });
  expect(await h.client.call(ChainRpc.whitelisted, { address: v1!.address })).toMatchObject({
    whitelisted: true,
  });

  const retracted = (await outboxFacts(h.sql))
    .filter((f) => f.startsWith(`${ChainEvents.factRetracted.name} `))
    .map((f) => JSON.parse(f.slice(ChainEvents.factRetracted.name.length + 1)));
  expect(retracted).toContainEqual({
    origin: expect.objectContaining({
      txHash: evaluated.log.transactionHash,
      logIndex: evaluated.log.logIndex,
      blockHash: evaluated.log.blockHash,
    }),
    retracted: ChainEvents.projectEvaluated.name,
  });
  expect(retracted).toContainEqual({
    origin: expect.objectContaining({ txHash: whitelisting.hash.toLowerCase() }),
    retracted: ChainEvents.userStatusChanged.name,
  });
  // Nothing of the surviving branch is retracted.
  expect(retracted.every((r) => r.origin.blockNumber > evaluated.log.blockNumber - 2)).toBe(true);
  await expect
    .poll(() => h.events.filter((e) => e.name === ChainEvents.factRetracted.name).length, { timeout: 10_000 })
    .toBe(retracted.length);
});
