import { randomBytes } from "node:crypto";
import { ChainEvents, ProjectsRpc } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import { addProject, expectAppError, seed, useHarness } from "../test/harness.ts";

// Chain facts as the chain-indexer will publish them (it does not exist yet: the test publishes them), and
// "sync now" while no indexer answers.
const h = useHarness("chain");

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

describe("chain.fact.retracted (a reorg)", () => {
  const retract = (o: ReturnType<typeof origin>, retracted: string) =>
    h.client.publish(ChainEvents.factRetracted, { origin: o, retracted });

  it("a retracted evaluation is undone: the next standing one decides, none leaves Pending", async () => {
    const { dto, projectHash } = await project();
    const first = origin(300, 1);
    const second = origin(305);
    await h.client.publish(ChainEvents.projectEvaluated, { origin: first, projectHash, isApproved: false });
    await h.client.publish(ChainEvents.projectEvaluated, { origin: second, projectHash, isApproved: true });
    await expect.poll(async () => (await read(dto.projectID)).status, { timeout: 10_000 }).toBe("Rejected");
    await retract(first, "chain.project.evaluated");
    await expect.poll(async () => (await read(dto.projectID)).status, { timeout: 10_000 }).toBe("Approved");
    await retract(second, "chain.project.evaluated");
    await expect.poll(async () => (await read(dto.projectID)).status, { timeout: 10_000 }).toBe("Pending");
    // The same transaction mined again into the new branch (same txHash and logIndex, another block) counts.
    const remined = { ...first, blockNumber: 301, blockHash: hex32() };
    await h.client.publish(ChainEvents.projectEvaluated, { origin: remined, projectHash, isApproved: true });
    await expect.poll(async () => (await read(dto.projectID)).status, { timeout: 10_000 }).toBe("Approved");
  });

  it("a retraction that arrives before its fact stops it; one of a fact no project used changes nothing", async () => {
    const { dto, projectHash } = await project();
    const orphaned = origin(400);
    await retract(orphaned, "chain.project.evaluated");
    await expect
      .poll(
        async () =>
          (await h.sql.query(`select retracted from projects.chain_fact where block_number = 400`)).rows,
      )
      .toEqual([{ retracted: true }]);
    await h.client.publish(ChainEvents.projectEvaluated, { origin: orphaned, projectHash, isApproved: true });
    await expect
      .poll(async () =>
        (await h.sql.query(`select project_hash from projects.chain_fact where block_number = 400`)).rows.map(
          (r) => r.project_hash,
        ),
      )
      .toEqual([dto.fileHash]);
    expect((await read(dto.projectID)).status).toBe("Pending");
    // A retracted user-status fact is not the projects service's business.
    await h.client.publish(ChainEvents.factRetracted, {
      origin: origin(401),
      retracted: "chain.user-status.changed",
    });
    expect((await read(dto.projectID)).status).toBe("Pending");
  });

  it("a retracted auction creation takes the auction flags back; a retracted status returns to the one before", async () => {
    const { dto, projectHash } = await project();
    const created = origin(500);
    const running = origin(510);
    const paused = origin(520);
    await h.client.publish(ChainEvents.auctionCreated, {
      origin: created,
      projectHash,
      auction: address,
      auctionType: "Dutch",
      creator: address,
    });
    for (const [o, status] of [
      [running, "Running"],
      [paused, "Paused"],
    ] as const) {
      await h.client.publish(ChainEvents.auctionStatusChanged, {
        origin: o,
        projectHash,
        auction: address,
        status,
      });
    }
    await expect
      .poll(async () => (await read(dto.projectID)).auctionStatus, { timeout: 10_000 })
      .toBe("Paused");
    await retract(paused, "chain.auction.status-changed");
    await expect
      .poll(async () => (await read(dto.projectID)).auctionStatus, { timeout: 10_000 })
      .toBe("Running");
    await retract(running, "chain.auction.status-changed");
    await retract(created, "chain.auction.created");
    await expect
      .poll(async () => (await read(dto.projectID)).isAuctionCreated, { timeout: 10_000 })
      .toBe(false);
    expect(await read(dto.projectID)).toMatchObject({ isAuctionStarted: false, auctionStatus: null });
  });
});

describe("sync now (ChangeStatus, CreateAuction, StartAuction)", () => {
  it("503 CHAIN_UNAVAILABLE while neither the chain index nor the chain answers; 403 for non-members; 404 for hidden projects", async () => {
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
