import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  auctionAt,
  confirm,
  factoryAt,
  registryAt,
  UserStatus,
  withRunner,
  writeDeployment,
} from "@fundraise/contracts";
import { type FreshChain, startFreshChain } from "@fundraise/contracts/testing";
import { ProjectsRpc } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addProject, type Harness, seed, startHarness } from "../test/harness.ts";

// "Sync now" (ChangeStatus, CreateAuction, StartAuction) while NO chain-indexer runs: the projects service
// reads the registry and the factory on a real anvil chain directly.
let chain: FreshChain;
let dir: string;
let h: Harness;
beforeAll(async () => {
  chain = await startFreshChain({ accounts: 6 });
  dir = mkdtempSync(join(tmpdir(), "projects-chain-"));
  writeDeployment(join(dir, "deployment.json"), chain.deployment);
  const registry = registryAt(chain.deployment.registry, chain.signers[0]);
  for (const voter of [2, 3, 4]) {
    await confirm(registry.editUserStatus(chain.signers[voter]?.address as string, UserStatus.Whitelisted));
  }
  h = await startHarness("sync_fallback", {
    CHAIN_RPC_URL: chain.anvil.url,
    CHAIN_DEPLOYMENT_FILE: join(dir, "deployment.json"),
  });
}, 60_000);
afterAll(async () => {
  await h?.stop();
  await chain?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const signer = (i: number) => chain.signers[i] as NonNullable<FreshChain["signers"][number]>;

describe("sync now reads the chain when the chain index does not answer", () => {
  it("ChangeStatus: Pending until the chain's election is decided, then Approved", async () => {
    const { caller } = await seed(h);
    const dto = await addProject(h, caller);
    const hash = `0x${dto.fileHash.toLowerCase()}`;
    const sync = () => h.client.call(ProjectsRpc.syncStatus, { caller, id: dto.projectID });
    expect((await sync()).status).toBe("Pending");

    const registry = registryAt(chain.deployment.registry);
    await confirm(withRunner(registry, signer(1)).registerProject(hash));
    await confirm(withRunner(registry, signer(2)).voteProposal(hash, true));
    await confirm(withRunner(registry, signer(3)).voteProposal(hash, true));
    expect((await sync()).status).toBe("Approved");
    expect((await h.client.call(ProjectsRpc.get, { caller, id: dto.projectID })).status).toBe("Approved");
  }, 30_000);

  it("CreateAuction / StartAuction: the factory's auction and its status", async () => {
    const { caller } = await seed(h);
    const dto = await addProject(h, caller);
    const hash = `0x${dto.fileHash.toLowerCase()}`;
    const sync = () => h.client.call(ProjectsRpc.syncAuction, { caller, id: dto.projectID });
    expect(await sync()).toMatchObject({ isAuctionCreated: false, isAuctionStarted: false });

    const registry = registryAt(chain.deployment.registry);
    await confirm(withRunner(registry, signer(1)).registerProject(hash));
    await confirm(withRunner(registry, signer(2)).voteProposal(hash, true));
    await confirm(withRunner(registry, signer(3)).voteProposal(hash, true));
    const factory = withRunner(factoryAt(chain.deployment.factory), signer(1));
    await confirm(factory.createToken(hash, "Sync token", "SYN", 1_000n * 10n ** 18n));
    await confirm(factory.createAuction(hash, "UncappedAuction", [0n, 10n ** 18n, 0n, 0n]));
    expect(await sync()).toMatchObject({
      isAuctionCreated: true,
      isAuctionStarted: false,
      auctionStatus: "Off",
    });

    const { auction } = (await factoryAt(chain.deployment.factory, chain.provider).projectTokens(hash)) as {
      auction: string;
    };
    await confirm(withRunner(auctionAt(auction), signer(1)).startAuction(3600));
    expect(await sync()).toMatchObject({
      isAuctionCreated: true,
      isAuctionStarted: true,
      auctionStatus: "Running",
    });
  }, 30_000);
});
