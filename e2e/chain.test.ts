import { randomBytes } from "node:crypto";
import {
  confirm,
  createProvider,
  factoryAt,
  type RegistryContract,
  registryAt,
  UserStatus,
  waitForReceipt,
  withRunner,
} from "@fundraise/contracts";
import { type JsonRpcProvider, parseEther, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "./client.ts";
import {
  createPeople,
  expectEnvelope,
  hexOf,
  newContent,
  type ProjectDto,
  type User,
} from "./projects-kit.ts";
import { type SharedSystem, sharedSystem } from "./shared.ts";

// The chain as the product meets it: transactions on anvil reach the API through the chain-indexer's facts
// alone (no ChangeStatus, CreateAuction or sign-in in between).
let sys: SharedSystem;
const client = createClient(() => sys);
const people = createPeople(() => sys, client);
let provider: JsonRpcProvider;
let admin: Wallet;
let registry: RegistryContract;

beforeAll(async () => {
  sys = await sharedSystem();
  provider = createProvider(sys.anvil.url, sys.anvil.chainId);
  admin = new Wallet(sys.chainAdminKey, provider);
  registry = registryAt(sys.deployment.registry, admin);
});
afterAll(() => provider?.destroy());

/** A fresh account with some ETH from this file's admin account (which sends every funding transaction). */
async function fundedWallet(): Promise<Wallet> {
  const wallet = Wallet.createRandom().connect(provider);
  const sent = await admin.sendTransaction({ to: wallet.address, value: parseEther("1") });
  await waitForReceipt(provider, sent.hash);
  return wallet as unknown as Wallet;
}

/**
 * Registers the hash from `proposer` and approves it: whitelists fresh voters who vote yes until the
 * election is decided (other files whitelist accounts too, so the quorum is read, not assumed).
 */
async function approveOnChain(projectHash: string, proposer: Wallet): Promise<void> {
  await confirm(withRunner(registry, proposer).registerProject(projectHash));
  for (let i = 0; i < 200; i++) {
    const election = (await registry.projectsRegistered(projectHash)) as { finalized: boolean };
    if (election.finalized) return;
    const voter = await fundedWallet();
    await confirm(registry.editUserStatus(voter.address, UserStatus.Whitelisted));
    await confirm(withRunner(registry, voter).voteProposal(projectHash, true));
  }
  throw new Error("the election did not finish");
}

const read = (user: User, id: number) => client.api("GET", `/Project/Get/${id}`, { token: user.token });

async function addProject(user: User): Promise<ProjectDto> {
  const content = newContent("chain", false);
  const res = await client.api("POST", "/Project/Add", {
    token: user.token,
    body: { projectName: `Chain ${randomBytes(6).toString("hex")}`, fileHex: hexOf(content.file) },
  });
  expectEnvelope(res, 201, "Add");
  return res.body.data as ProjectDto;
}

describe("chain facts reach the API through the chain-indexer", () => {
  it("a project registered and voted on chain becomes Approved without ChangeStatus", async () => {
    const owner = await people.newUser("Base");
    const project = await addProject(owner);
    expect(project.status).toBe("Pending");
    const proposer = await fundedWallet();
    await approveOnChain(`0x${project.fileHash.toLowerCase()}`, proposer);
    await expect
      .poll(async () => ((await read(owner, project.projectID)).body.data as ProjectDto).status, {
        timeout: 20_000,
        interval: 100,
      })
      .toBe("Approved");
  }, 60_000);

  it("an auction created on chain sets isAuctionCreated", async () => {
    const owner = await people.newUser("Base");
    const project = await addProject(owner);
    const hash = `0x${project.fileHash.toLowerCase()}`;
    const proposer = await fundedWallet();
    await approveOnChain(hash, proposer);
    const factory = withRunner(factoryAt(sys.deployment.factory), proposer);
    await confirm(factory.createToken(hash, "Chain token", "CHN", 1_000n * 10n ** 18n));
    await confirm(factory.createAuction(hash, "UncappedAuction", [0n, 10n ** 18n, 0n, 0n]));
    await expect
      .poll(async () => ((await read(owner, project.projectID)).body.data as ProjectDto).isAuctionCreated, {
        timeout: 20_000,
        interval: 100,
      })
      .toBe(true);
  }, 60_000);

  it("a user set to Blacklist on chain loses write access on the next request, without signing in again", async () => {
    const user = await people.newUser("Base");
    // A name the projects service refuses (a control character): 400 for Base, 403 once Blacklist, and
    // nothing is written either way.
    const attempt = () =>
      client.api("POST", "/Project/Add", {
        token: user.token,
        body: { projectName: "bell\u0007", fileHex: "00" },
      });
    expect((await attempt()).status).toBe(400);
    await confirm(registry.editUserStatus(user.wallet.address, UserStatus.Blacklisted));
    await expect.poll(async () => (await attempt()).status, { timeout: 20_000, interval: 100 }).toBe(403);
  }, 60_000);

  it("Whitelisted/{address} follows the chain's whitelist", async () => {
    const account = Wallet.createRandom().address;
    const whitelisted = async () =>
      (await client.api("GET", `/EventDebug/Whitelisted/${account}`)).body.data as boolean;
    expect(await whitelisted()).toBe(false);
    const receipt = await confirm(registry.editUserStatus(account, UserStatus.Whitelisted));
    // A client waits for its own transaction: once X-Indexed-Block reaches its block, the answer has it.
    let answer = await client.api("GET", `/EventDebug/Whitelisted/${account}`);
    await expect
      .poll(
        async () => {
          answer = await client.api("GET", `/EventDebug/Whitelisted/${account}`);
          return Number(answer.headers.get("x-indexed-block")) >= receipt.blockNumber;
        },
        { timeout: 20_000, interval: 50 },
      )
      .toBe(true);
    expect(answer.body.data).toBe(true);
    await expect.poll(whitelisted, { timeout: 20_000, interval: 100 }).toBe(true);
    await confirm(registry.editUserStatus(account, UserStatus.Default));
    await expect.poll(whitelisted, { timeout: 20_000, interval: 100 }).toBe(false);
  }, 60_000);
});
