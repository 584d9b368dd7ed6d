import { randomBytes } from "node:crypto";
import { ChainEvents, ProjectsRpc } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addProject, expectAppError, type Harness, seed, startHarness } from "../test/harness.ts";

// Chain facts as the chain-indexer will publish them (it does not exist yet: the test publishes them), and
// "sync now" while no indexer answers.
let h: Harness;
beforeAll(async () => {
  h = await startHarness("chain");
});
afterAll(() => h?.stop());

const hex32 = () => `0x${randomBytes(32).toString("hex")}`;
const origin = (blockNumber: number, logIndex = 0, txHash = hex32()) => ({
  chainId: 31337,
  txHash,
  logIndex,
  blockNumber,
  blockHash: hex32(),
});
const address = `0x${"ab".repeat(20)}`;

async function project() {
  const { caller } = await seed(h);
  const dto = await addProject(h, caller);
  return { caller, dto, projectHash: `0x${dto.fileHash.toLowerCase()}` };
}
const claims = async () =>
  (await h.sql.query(`select message_key from projects.processed_message where consumer = 'projects'`)).rows;
const read = async (id: number) =>
  h.client.call(ProjectsRpc.get, { caller: (await seed(h, "Admin")).caller, id });

describe("chain.project.evaluated", () => {
  it("sets the status; the first evaluation wins, a repeated fact changes nothing", async () => {
    const { dto, projectHash } = await project();
    const first = origin(100, 2);
    await h.client.publish(ChainEvents.projectEvaluated, { origin: first, projectHash, isApproved: true });
    await expect.poll(async () => (await read(dto.projectID)).status, { timeout: 10_000 }).toBe("Approved");
    // A later evaluation does not change it.
    await h.client.publish(ChainEvents.projectEvaluated, {
      origin: origin(101),
      projectHash,
      isApproved: false,
    });
    // An earlier one arriving late is the first: it wins.
    await h.client.publish(ChainEvents.projectEvaluated, {
      origin: origin(99),
      projectHash,
      isApproved: false,
    });
    await expect.poll(async () => (await read(dto.projectID)).status, { timeout: 10_000 }).toBe("Rejected");
    // The same fact again (same chainId, txHash, logIndex) is applied once: claimed in processed_message.
    await h.client.publish(ChainEvents.projectEvaluated, { origin: first, projectHash, isApproved: true });
    // A fact for a hash no project has is claimed and changes nothing; it serves as a barrier here.
    await h.client.publish(ChainEvents.projectEvaluated, {
      origin: origin(1),
      projectHash: hex32(),
      isApproved: true,
    });
    await expect.poll(async () => (await claims()).length, { timeout: 10_000 }).toBe(4);
    expect((await read(dto.projectID)).status).toBe("Rejected");
  });
});

describe("chain.auction.*", () => {
  it("created sets isAuctionCreated; status past Off sets isAuctionStarted; an older status is ignored", async () => {
    const { dto, projectHash } = await project();
    await h.client.publish(ChainEvents.auctionCreated, {
      origin: origin(200),
      projectHash,
      auction: address,
      auctionType: "Dutch",
      creator: address,
    });
    await expect
      .poll(async () => (await read(dto.projectID)).isAuctionCreated, { timeout: 10_000 })
      .toBe(true);
    await h.client.publish(ChainEvents.auctionStatusChanged, {
      origin: origin(210),
      projectHash,
      auction: address,
      status: "Running",
    });
    await expect
      .poll(async () => (await read(dto.projectID)).auctionStatus, { timeout: 10_000 })
      .toBe("Running");
    await h.client.publish(ChainEvents.auctionStatusChanged, {
      origin: origin(205),
      projectHash,
      auction: address,
      status: "Off",
    });
    await h.client.publish(ChainEvents.auctionStatusChanged, {
      origin: origin(220),
      projectHash,
      auction: address,
      status: "Ended",
    });
    await expect
      .poll(async () => (await read(dto.projectID)).auctionStatus, { timeout: 10_000 })
      .toBe("Ended");
    expect(await read(dto.projectID)).toMatchObject({ isAuctionCreated: true, isAuctionStarted: true });
  });
});

describe("sync now (ChangeStatus, CreateAuction, StartAuction)", () => {
  it("503 CHAIN_UNAVAILABLE while no chain-indexer answers; 403 for non-members; 404 for hidden projects", async () => {
    const { caller, dto } = await project();
    await expectAppError(
      h.client.call(ProjectsRpc.syncStatus, { caller, id: dto.projectID }),
      "unavailable",
      "CHAIN_UNAVAILABLE",
    );
    await expectAppError(
      h.client.call(ProjectsRpc.syncAuction, { caller, id: dto.projectID }),
      "unavailable",
      "CHAIN_UNAVAILABLE",
    );
    const viewer = (await seed(h, "Viewer")).caller;
    await expectAppError(
      h.client.call(ProjectsRpc.syncAuction, { caller: viewer, id: dto.projectID }),
      "forbidden",
      "PROJECT_NOT_MEMBER",
    );
    await expectAppError(
      h.client.call(ProjectsRpc.syncStatus, { caller: (await seed(h)).caller, id: dto.projectID }),
      "not_found",
      "PROJECT_NOT_FOUND",
    );
  });
});
