import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packageRoot } from "../scripts/compile.ts";
import { AuctionStatus } from "../src/auction-types.ts";
import { auctionAt, bidCoinAt, factoryAt, registryAt } from "../src/contracts.ts";
import { type Deployment, loadDeployment } from "../src/deployment.ts";
import { chainEvents } from "../src/events.ts";
import { createProvider } from "../src/provider.ts";
import { ADMIN_ROLE, roleOf } from "../src/roles.ts";
import { type AnvilInstance, startAnvil } from "../src/testing.ts";
import { BID_GAS_LIMIT, E18, eventIn, expectRevert, projectHash, send } from "./helpers.ts";

let anvil: AnvilInstance;
let deployment: Deployment;
let outFile: string;
let output = "";

/** Runs `scripts/deploy.ts` the way `pnpm --filter @fundraise/contracts deploy` does. */
async function runDeployScript(args: string[], env: Record<string, string>): Promise<number> {
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/deploy.ts", ...args], {
    cwd: packageRoot,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  // Under a loaded machine a cold tsx start plus the deployment can take a while; never hang silently.
  const kill = setTimeout(() => child.kill("SIGKILL"), 100_000);
  return await new Promise((resolve) =>
    child.once("exit", (code) => {
      clearTimeout(kill);
      resolve(code ?? -1);
    }),
  );
}

beforeAll(async () => {
  anvil = await startAnvil();
  outFile = path.join(mkdtempSync(path.join(tmpdir(), "deploy-")), "local.json");
  const code = await runDeployScript(["--demo", "--out", outFile], { CHAIN_RPC_URL: anvil.url });
  expect(code, output).toBe(0);
  deployment = loadDeployment(outFile);
}, 120_000);

afterAll(async () => {
  await anvil?.stop();
});

describe("scripts/deploy.ts --demo on a fresh anvil", () => {
  it("writes the deployment file", () => {
    expect(deployment.chainId).toBe(31337);
    expect(deployment.startBlock).toBe(1);
    expect(Date.parse(deployment.deployedAt)).toBeLessThanOrEqual(Date.now());
    expect(output).toContain("AuctionFactory");
  });

  it("leaves a chain where a client registers, votes, creates a token and an auction, starts it and bids", async () => {
    const provider = createProvider(anvil.url, anvil.chainId);
    const wallet = (i: number) => new Wallet(anvil.accounts[i]!, provider);
    const registry = (i: number) => registryAt(deployment.registry, wallet(i));
    const factory = (i: number) => factoryAt(deployment.factory, wallet(i));

    // Demo roles: #0 and #1 admins, #2-#4 whitelisted, #5 viewer, #6 blacklisted, the rest Base.
    const expected = [
      "Admin",
      "Admin",
      "Whitelist",
      "Whitelist",
      "Whitelist",
      "Viewer",
      "Blacklist",
      "Base",
      "Base",
      "Base",
    ];
    const actual = [];
    for (let i = 0; i < 10; i++) {
      const address = wallet(i).address;
      actual.push(
        roleOf(await registry(0).statusList(address), await registry(0).hasRole(ADMIN_ROLE, address)),
      );
    }
    expect(actual).toEqual(expected);

    const hash = projectHash("demo");
    const proposer = wallet(7).address;
    await expectRevert(registry(6).registerProject(hash), "Blacklisted", [wallet(6).address]);
    expect([...eventIn(await send(registry(7).registerProject(hash)), "Register")]).toEqual([proposer, hash]);
    await send(registry(2).voteProposal(hash, true));
    expect([...eventIn(await send(registry(3).voteProposal(hash, true)), "ProjectEvaluation")]).toEqual([
      hash,
      true,
    ]);

    const created = eventIn(
      await send(factory(7).createToken(hash, "Demo", "DMO", 1_000n * E18)),
      "TokenCreation",
    );
    expect([created.creator, created.Name, created.Symbol]).toEqual([proposer, "Demo", "DMO"]);
    const auctionEvent = eventIn(
      await send(factory(7).createAuction(hash, "DutchAuction", [100n * E18, 10n * E18, 2n * E18, 0n])),
      "CreateAuctionEvent",
    );
    expect([auctionEvent.creator, auctionEvent.auctionType, auctionEvent.fileHash]).toEqual([
      proposer,
      "DutchAuction",
      hash,
    ]);
    const auction = auctionAt(auctionEvent.auction as string, wallet(7), "DutchAuction");
    const started = eventIn(await send(auction.startAuction(2_000)), "AuctionStarted");
    expect((started.end as bigint) - (started.start as bigint)).toBe(2_000n);
    expect(await factoryAt(deployment.factory, provider).isAuctionStarted(hash)).toBe(true);

    const bidder = wallet(8);
    await send(bidCoinAt(deployment.bidCoin, bidder).approve(auctionEvent.auction, 10n * E18));
    const bid = eventIn(
      // A gas limit of its own: an estimate made in the start's second is too low for a later block.
      await send(
        auctionAt(auctionEvent.auction as string, bidder).bid(10n * E18, { gasLimit: BID_GAS_LIMIT }),
      ),
      // The demo's Dutch auction: the Dutch form, with the price.
      "BidSubmission(address,uint256,uint256)",
    );
    expect(bid.sender).toBe(bidder.address);
    expect(await auction.getStatus()).toBe(BigInt(AuctionStatus.Running));

    // An indexer following events.ts from the start block sees the whole story.
    const count = async (address: string, topic: string) =>
      (
        await provider.getLogs({
          address,
          fromBlock: deployment.startBlock,
          toBlock: "latest",
          topics: [topic],
        })
      ).length;
    expect(await count(deployment.registry, chainEvents.WhitelistInsert.topic)).toBe(3);
    expect(await count(deployment.registry, chainEvents.UserStatusChanged.topic)).toBe(5);
    expect(await count(deployment.registry, chainEvents.AdminChange.topic)).toBe(2); // deployer + #1
    expect(await count(deployment.registry, chainEvents.ProjectEvaluation.topic)).toBe(1);
    expect(await count(deployment.factory, chainEvents.CreateAuctionEvent.topic)).toBe(1);
    expect(await count(auctionEvent.auction as string, chainEvents.DutchBidSubmission.topic)).toBe(1);
    expect(await count(auctionEvent.auction as string, chainEvents.BidSubmission.topic)).toBe(0);
    provider.destroy();
  });
});

describe("scripts/deploy.ts --keep-existing", () => {
  it("keeps a deployment whose registry is on the chain and deploys anew on a fresh chain", async () => {
    output = "";
    expect(
      await runDeployScript(["--keep-existing", "--out", outFile], { CHAIN_RPC_URL: anvil.url }),
      output,
    ).toBe(0);
    expect(output).toContain(`registry ${deployment.registry} already deployed on chain 31337`);
    expect(loadDeployment(outFile)).toEqual(deployment);

    // A restarted chain without its state: the file names a registry with no code there.
    const fresh = await startAnvil();
    try {
      output = "";
      expect(
        await runDeployScript(["--keep-existing", "--out", outFile], { CHAIN_RPC_URL: fresh.url }),
        output,
      ).toBe(0);
      expect(output).toContain("names no contract on chain 31337");
      expect(output).toContain("AuctionFactory");
      expect(loadDeployment(outFile).deployedAt).not.toBe(deployment.deployedAt);
    } finally {
      await fresh.stop();
    }
  }, 200_000);
});
