import { randomBytes } from "node:crypto";
import {
  confirm,
  createProvider,
  type RegistryContract,
  registryAt,
  UserStatus,
  withRunner,
} from "@fundraise/contracts";
import { revertTo, snapshot } from "@fundraise/contracts/testing";
import { type JsonRpcProvider, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "./client.ts";
import { createPeople, expectEnvelope, hexOf, newContent, type ProjectDto } from "./projects-kit.ts";
import type { SharedSystem } from "./shared.ts";
import { type System, startSystem } from "./system.ts";

// A chain reorganisation under the running system: the chain-indexer retracts the facts of the orphaned
// blocks, and the projects service and the event-debug routes follow. A system of its own: reverting the
// shared system's anvil would take other files' transactions with it.
let system: System;
let sys: SharedSystem;
const client = createClient(() => sys);
const people = createPeople(() => sys, client);
let provider: JsonRpcProvider;
let registry: RegistryContract;

beforeAll(async () => {
  system = await startSystem({ env: { TRUST_PROXY: "true" } });
  // Account 0 deployed the platform: it holds the admin role.
  sys = { ...system, chainAdminKey: system.anvil.accounts[0] as string };
  provider = createProvider(system.anvil.url, system.anvil.chainId);
  registry = registryAt(system.deployment.registry, new Wallet(sys.chainAdminKey, provider));
}, 120_000);
afterAll(async () => {
  provider?.destroy();
  await system?.stop();
});

const accounts = () => system.anvil.accounts.slice(2).map((key) => new Wallet(key, provider));

describe("a reorg that removes a project's evaluation and a whitelisting", () => {
  it("the project goes back to Pending and Whitelisted to false; the new branch's evaluation is followed", async () => {
    const owner = await people.newUser("Base");
    const content = newContent("reorg", false);
    const added = await client.api("POST", "/Project/Add", {
      token: owner.token,
      body: { projectName: `Reorg ${randomBytes(6).toString("hex")}`, fileHex: hexOf(content.file) },
    });
    expectEnvelope(added, 201, "Add");
    const project = added.body.data as ProjectDto;
    const hash = `0x${project.fileHash.toLowerCase()}`;
    const [proposer, newcomer, ...voters] = accounts() as [Wallet, Wallet, ...Wallet[]];
    for (const voter of voters) await confirm(registry.editUserStatus(voter.address, UserStatus.Whitelisted));
    await confirm(withRunner(registry, proposer).registerProject(hash));
    const status = async () =>
      (
        (await client.api("GET", `/Project/Get/${project.projectID}`, { token: owner.token })).body
          .data as ProjectDto
      ).status;
    const whitelisted = async () =>
      (await client.api("GET", `/EventDebug/Whitelisted/${newcomer.address}`)).body.data as boolean;

    // The branch that will vanish: enough yes votes to decide, and a whitelisting.
    const fork = await snapshot(provider);
    for (const voter of voters) {
      if (((await registry.projectsRegistered(hash)) as { finalized: boolean }).finalized) break;
      await confirm(withRunner(registry, voter).voteProposal(hash, true));
    }
    await confirm(registry.editUserStatus(newcomer.address, UserStatus.Whitelisted));
    await expect.poll(status, { timeout: 20_000, interval: 100 }).toBe("Approved");
    await expect.poll(whitelisted, { timeout: 20_000, interval: 100 }).toBe(true);

    // Another branch from the fork, longer, without those transactions.
    await revertTo(provider, fork);
    await provider.send("anvil_mine", ["0x10"]);
    await expect.poll(status, { timeout: 20_000, interval: 100 }).toBe("Pending");
    await expect.poll(whitelisted, { timeout: 20_000, interval: 100 }).toBe(false);

    // The new branch evaluates the project again: the API follows it.
    for (const voter of voters) {
      if (((await registry.projectsRegistered(hash)) as { finalized: boolean }).finalized) break;
      await confirm(withRunner(registry, voter).voteProposal(hash, true));
    }
    await expect.poll(status, { timeout: 20_000, interval: 100 }).toBe("Approved");
  }, 120_000);
});
