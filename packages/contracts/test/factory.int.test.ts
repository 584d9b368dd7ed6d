import { ContractFactory, ZeroAddress } from "ethers";
import { describe, expect, it } from "vitest";
import { AUCTION_TYPES, AuctionStatus } from "../src/auction-types.ts";
import { auctionAt, type FactoryContract, projectTokenAt, withRunner } from "../src/contracts.ts";
import { fcfsAuctionAbi, fcfsAuctionBytecode } from "../src/generated/fcfs-auction.ts";
import { waitForReceipt } from "../src/provider.ts";
import { setNextBlockTimestamp } from "../src/testing.ts";
import {
  addr,
  approvedProject,
  type Chain,
  createAuction,
  E18,
  eventIn,
  expectRevert,
  MINTER_ROLE,
  namesIn,
  projectHash,
  roles,
  send,
  signer,
  start,
  useChain,
} from "./helpers.ts";

const chain = useChain();
const as = (c: Chain, index: number): FactoryContract => withRunner(c.factory, signer(c, index));

/** Valid parameters for each type: [supply, rate, finalRate, limit]. */
const validParams: Record<(typeof AUCTION_TYPES)[number], bigint[]> = {
  UncappedAuction: [0n, 2n * E18, 0n, 0n],
  PseudoCappedAuction: [100n * E18, 0n, 0n, 0n],
  OBFCFSAuction: [100n * E18, 2n * E18, 0n, 0n],
  FCFSAuction: [100n * E18, 2n * E18, 0n, 0n],
  DutchAuction: [100n * E18, 10n * E18, 2n * E18, 0n],
  OBDutchAuction: [100n * E18, 0n, E18, 0n],
  StrictDutchAuction: [100n * E18, 10n * E18, 2n * E18, 0n],
};

describe("createToken", () => {
  it("clones a token for the approved proposer, who receives the initial supply", async () => {
    const c = chain();
    const hash = await approvedProject(c, "token");
    const receipt = await send(as(c, roles.proposer).createToken(hash, "Project Coin", "PRC", 1_000n * E18));
    const event = eventIn(receipt, "TokenCreation");
    expect([event.creator, event.Name, event.Symbol]).toEqual([
      addr(c, roles.proposer),
      "Project Coin",
      "PRC",
    ]);
    const token = projectTokenAt(event.token as string, c.provider);
    expect(await token.name()).toBe("Project Coin");
    expect(await token.symbol()).toBe("PRC");
    expect(await token.decimals()).toBe(18n);
    expect(await token.balanceOf(addr(c, roles.proposer))).toBe(1_000n * E18);
    expect(await token.totalSupply()).toBe(1_000n * E18);
    expect(await token.hasRole(MINTER_ROLE, c.deployment.factory)).toBe(true);
    expect([...(await c.factory.projectTokens(hash))]).toEqual([
      addr(c, roles.proposer),
      event.token,
      ZeroAddress,
      "",
    ]);
    // A token alone is not an auction (the first implementation's "created" check said it was).
    expect(await c.factory.isAuctionCreated(hash)).toBe(false);
    expect(await c.factory.isAuctionStarted(hash)).toBe(false);

    await expectRevert(as(c, roles.proposer).createToken(hash, "Again", "AG", 1n), "TokenAlreadyCreated", [
      hash,
    ]);
  });

  it("refuses callers other than the approved proposer and projects not approved", async () => {
    const c = chain();
    const hash = await approvedProject(c, "token-rules");
    await expectRevert(as(c, roles.bidders[0]).createToken(hash, "X", "X", 1n), "NotApprovedProposer", [
      addr(c, roles.bidders[0]),
      hash,
    ]);
    const pending = projectHash("pending");
    await send(withRunner(c.registry, signer(c, roles.proposer)).registerProject(pending));
    await expectRevert(as(c, roles.proposer).createToken(pending, "X", "X", 1n), "NotApprovedProposer", [
      addr(c, roles.proposer),
      pending,
    ]);
    await expectRevert(as(c, roles.proposer).createToken(hash, "", "X", 1n), "EmptyTokenName");
  });
});

describe("createAuction", () => {
  it("registers the seven types in the client's order, with the registry and bid coin it was given", async () => {
    const c = chain();
    expect([...(await c.factory.auctionTypes())]).toEqual([...AUCTION_TYPES]);
    expect(await c.factory.registry()).toBe(c.deployment.registry);
    expect(await c.factory.bidCoin()).toBe(c.deployment.bidCoin);
    expect((await c.provider.getCode(await c.factory.tokenImplementation())).length).toBeGreaterThan(2);
  });

  it.each(AUCTION_TYPES)("creates a %s clone, funds it and records it", async (type) => {
    const c = chain();
    const params = validParams[type];
    const hash = await approvedProject(c, `create-${type}`);
    await send(as(c, roles.proposer).createToken(hash, "T", "T", 0n));
    const receipt = await send(as(c, roles.proposer).createAuction(hash, type, params));
    const event = eventIn(receipt, "CreateAuctionEvent");
    expect([event.creator, event.auctionType, event.fileHash]).toEqual([addr(c, roles.proposer), type, hash]);
    const record = await c.factory.projectTokens(hash);
    expect([record.proposer, record.auction, record.auctionType]).toEqual([
      addr(c, roles.proposer),
      event.auction,
      type,
    ]);
    expect(await c.factory.isAuctionCreated(hash)).toBe(true);
    expect(await c.factory.isAuctionStarted(hash)).toBe(false);

    const auction = auctionAt(event.auction as string, c.provider);
    expect(await auction.proposer()).toBe(addr(c, roles.proposer));
    expect(await auction.projectWallet()).toBe(addr(c, roles.proposer));
    expect(await auction.status()).toBe(BigInt(AuctionStatus.Off));
    const token = projectTokenAt(record.token as string, c.provider);
    if (type === "UncappedAuction") {
      expect(await token.hasRole(MINTER_ROLE, event.auction)).toBe(true);
      expect(await token.balanceOf(event.auction)).toBe(0n);
    } else {
      expect(await token.balanceOf(event.auction)).toBe(params[0]);
      expect(await token.hasRole(MINTER_ROLE, event.auction)).toBe(false);
    }
    await expectRevert(as(c, roles.proposer).createAuction(hash, type, params), "AuctionAlreadyCreated", [
      hash,
    ]);
  });

  it("refuses a project without a token, unknown types and invalid parameters", async () => {
    const c = chain();
    const hash = await approvedProject(c, "create-rules");
    await expectRevert(
      as(c, roles.proposer).createAuction(hash, "FCFSAuction", validParams.FCFSAuction),
      "TokenNotCreated",
      [hash],
    );
    await send(as(c, roles.proposer).createToken(hash, "T", "T", 0n));
    await expectRevert(
      as(c, roles.bidders[0]).createAuction(hash, "FCFSAuction", validParams.FCFSAuction),
      "NotApprovedProposer",
      [addr(c, roles.bidders[0]), hash],
    );
    await expectRevert(
      as(c, roles.proposer).createAuction(hash, "Vickrey", validParams.FCFSAuction),
      "UnknownAuctionType",
      ["Vickrey"],
    );
    const invalid: [string, bigint[], string][] = [
      ["FCFSAuction", [0n, 2n * E18, 0n, 0n], "numberOfTokensToBeDistributed"],
      ["FCFSAuction", [100n, 0n, 0n, 0n], "rate"],
      ["UncappedAuction", [0n, 0n, 0n, 0n], "rate"],
      ["DutchAuction", [100n, 2n * E18, 2n * E18, 0n], "finalRate"],
      ["DutchAuction", [100n, 2n * E18, 0n, 0n], "finalRate"],
      ["StrictDutchAuction", [100n, 2n * E18, 3n * E18, 0n], "finalRate"],
      ["PseudoCappedAuction", [0n, 0n, 0n, 0n], "numberOfTokensToBeDistributed"],
      ["OBDutchAuction", [0n, 0n, 0n, 0n], "numberOfTokensToBeDistributed"],
    ];
    for (const [type, params, reason] of invalid) {
      await expectRevert(as(c, roles.proposer).createAuction(hash, type, params), "InvalidParams", [reason]);
    }
    expect(await c.factory.isAuctionCreated(hash)).toBe(false);
  });
});

describe("admin controls", () => {
  it("pauses a running auction through the factory (admins only)", async () => {
    const c = chain();
    const { hash, auction, address } = await createAuction(c, "FCFSAuction", {
      supply: 100n * E18,
      rate: E18,
    });
    await expectRevert(c.factory.pauseAuction(hash, 60), "AuctionNotRunning", [BigInt(AuctionStatus.Off)]);
    const started = await start(c, auction, 1_000);
    await expectRevert(as(c, roles.proposer).pauseAuction(hash, 60), "NotAdmin", [addr(c, roles.proposer)]);
    await expectRevert(c.factory.pauseAuction(projectHash("none"), 60), "AuctionNotCreated", [
      projectHash("none"),
    ]);
    await expectRevert(c.factory.pauseAuction(hash, 0), "InvalidDuration");
    await expectRevert(withRunner(auction, signer(c, roles.admin)).pauseAuction(60), "NotFactory", [
      addr(c, roles.admin),
    ]);

    await setNextBlockTimestamp(c.provider, started + 100);
    const receipt = await send(as(c, roles.admin2).pauseAuction(hash, 60));
    expect(eventIn(receipt, "AuctionPaused", address).pauseDuration).toBe(60n);
    expect(await auction.status()).toBe(BigInt(AuctionStatus.Paused));
    expect(await auction.latestEndTime()).toBe(BigInt(started + 1_060)); // start + 1000 s + 60 s of pause
    expect(await auction.pausedUntil()).toBe(BigInt(started + 160)); // paused at +100 for 60 s
    await expectRevert(c.factory.pauseAuction(hash, 60), "AuctionNotRunning", [BigInt(AuctionStatus.Paused)]);
  });

  it("force-finishes an auction once, from Off or Running", async () => {
    const c = chain();
    const { hash, auction, address } = await createAuction(c, "FCFSAuction", {
      supply: 100n * E18,
      rate: E18,
    });
    await expectRevert(as(c, roles.voters[0]).forceFinishAuction(hash), "NotAdmin", [
      addr(c, roles.voters[0]),
    ]);
    const receipt = await send(c.factory.forceFinishAuction(hash));
    expect(namesIn(receipt, address)).toContain("AuctionFinished");
    expect(await auction.status()).toBe(BigInt(AuctionStatus.Ended));
    await expectRevert(c.factory.forceFinishAuction(hash), "AuctionAlreadyEnded");
    await expectRevert(auction.startAuction(100), "AuctionNotOff", [BigInt(AuctionStatus.Ended)]);
    expect(await c.factory.isAuctionStarted(hash)).toBe(true); // past Off, though it never ran
  });

  it("changes an implementation only with two admins; later auctions use it", async () => {
    const c = chain();
    const replacement = await new ContractFactory(
      fcfsAuctionAbi,
      fcfsAuctionBytecode,
      signer(c, roles.admin),
    ).deploy();
    await waitForReceipt(c.provider, replacement.deploymentTransaction()!.hash);
    const replacementAddress = await replacement.getAddress();
    await expectRevert(
      as(c, roles.admin).setImplementation("Vickrey", replacementAddress),
      "UnknownAuctionType",
      ["Vickrey"],
    );
    await expectRevert(
      as(c, roles.admin).setImplementation("FCFSAuction", addr(c, roles.bidders[0])),
      "InvalidAddress",
    );
    await expectRevert(
      as(c, roles.bidders[0]).setImplementation("FCFSAuction", replacementAddress),
      "NotAdmin",
      [addr(c, roles.bidders[0])],
    );

    const first = await send(as(c, roles.admin).setImplementation("FCFSAuction", replacementAddress));
    expect(namesIn(first)).toEqual(["ActionApproved"]);
    expect(await c.factory.implementationOf("FCFSAuction")).not.toBe(replacementAddress);
    const second = await send(as(c, roles.admin2).setImplementation("FCFSAuction", replacementAddress));
    expect([...eventIn(second, "ImplementationChanged")]).toEqual(["FCFSAuction", replacementAddress]);
    expect(await c.factory.implementationOf("FCFSAuction")).toBe(replacementAddress);

    const { address } = await createAuction(c, "FCFSAuction", { supply: 10n, rate: E18 });
    // An EIP-1167 clone embeds its implementation's address in its code.
    const code = await c.provider.getCode(address);
    expect(code.toLowerCase()).toContain(replacementAddress.slice(2).toLowerCase());
  });

  it("changes the bid coin only with two admins", async () => {
    const c = chain();
    const newCoin = c.deployment.registry; // any contract address will do for the check
    await send(as(c, roles.admin).setBidCoin(newCoin));
    expect(await c.factory.bidCoin()).toBe(c.deployment.bidCoin);
    const second = await send(as(c, roles.admin2).setBidCoin(newCoin));
    expect(eventIn(second, "BidCoinChanged").bidCoin).toBe(newCoin);
    expect(await c.factory.bidCoin()).toBe(newCoin);
    await expectRevert(as(c, roles.admin).setBidCoin(addr(c, roles.bidders[0])), "InvalidAddress");
  });
});
