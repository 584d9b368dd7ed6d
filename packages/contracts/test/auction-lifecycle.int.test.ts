import { describe, expect, it } from "vitest";
import { AuctionStatus } from "../src/auction-types.ts";
import { auctionAt, withRunner } from "../src/contracts.ts";
import { setNextBlockTimestamp } from "../src/testing.ts";
import {
  addr,
  bid,
  type Chain,
  createAuction,
  E18,
  eventIn,
  expectRevert,
  mineAt,
  namesIn,
  roles,
  send,
  signer,
  start,
  useChain,
} from "./helpers.ts";

const chain = useChain();
const [b1, b2] = roles.bidders;

/** An FCFS auction (100 tokens at 1 bid coin each) stands in for the behaviour all types share. */
const launch = (c: Chain) => createAuction(c, "FCFSAuction", { supply: 100n * E18, rate: E18 });

describe("start", () => {
  it("starts once, by the proposer, with a positive duration in seconds", async () => {
    const c = chain();
    const { hash, auction } = await launch(c);
    await expectRevert(withRunner(auction, signer(c, b1)).startAuction(100), "NotProposer", [addr(c, b1)]);
    await expectRevert(auction.startAuction(0), "InvalidDuration");
    const receipt = await send(auction.startAuction(1_000));
    const startedAt = (await c.provider.getBlock(receipt.blockNumber))!.timestamp;
    expect([...eventIn(receipt, "AuctionStarted")]).toEqual([BigInt(startedAt), BigInt(startedAt + 1_000)]);
    expect(await auction.startTime()).toBe(BigInt(startedAt));
    expect(await auction.duration()).toBe(1_000n);
    expect(await c.factory.isAuctionStarted(hash)).toBe(true);
    await expectRevert(auction.startAuction(1_000), "AuctionNotOff", [BigInt(AuctionStatus.Running)]);
  });

  it("cannot be initialized again, nor can the implementation be", async () => {
    const c = chain();
    const { auction } = await launch(c);
    const params = [1n, 1n, 0n, 0n];
    await expectRevert(
      auction.initialize(c.deployment.bidCoin, c.deployment.bidCoin, addr(c, b1), params),
      "InvalidInitialization",
    );
    const implementation = auctionAt(await c.factory.implementationOf("FCFSAuction"), signer(c, b1));
    await expectRevert(
      implementation.initialize(c.deployment.bidCoin, c.deployment.bidCoin, addr(c, b1), params),
      "InvalidInitialization",
    );
  });
});

describe("bid rules", () => {
  it("refuses bids before the start, from the proposer or project wallet, of zero, or without allowance", async () => {
    const c = chain();
    const { auction, address } = await launch(c);
    await expectRevert(bid(c, auction, b1, E18), "AuctionNotRunning", [BigInt(AuctionStatus.Off)]);
    await start(c, auction, 1_000);
    await expectRevert(auction.bid(E18), "ProposerCannotBid", [addr(c, roles.proposer)]);
    await expectRevert(withRunner(auction, signer(c, b1)).bid(0), "ZeroAmount");
    // b1 approved E18 for the refused bid above; b2 never approved anything.
    await expectRevert(withRunner(auction, signer(c, b2)).bid(E18), "ERC20InsufficientAllowance", [
      address,
      0n,
      E18,
    ]);
    await expectRevert(bid(c, auction, roles.viewer, E18), "ERC20InsufficientBalance", [
      addr(c, roles.viewer),
      0n,
      E18,
    ]);
  });
});

describe("status", () => {
  it("moves Running -> Paused -> Running -> Ended, lazily on chain and at once in getStatus()", async () => {
    const c = chain();
    const { hash, auction } = await launch(c);
    const t0 = await start(c, auction, 1_000);
    await expectRevert(withRunner(auction, signer(c, b1)).manualFinish(), "AuctionNotEnded", [
      BigInt(AuctionStatus.Running),
    ]);

    await setNextBlockTimestamp(c.provider, t0 + 100);
    await send(c.factory.pauseAuction(hash, 50));
    expect(await auction.latestEndTime()).toBe(BigInt(t0 + 1_050)); // 1,000 s + a 50 s pause
    await expectRevert(bid(c, auction, b1, E18), "AuctionNotRunning", [BigInt(AuctionStatus.Paused)]);

    await mineAt(c, t0 + 150); // the pause is over
    expect(await auction.getStatus()).toBe(BigInt(AuctionStatus.Running));
    expect(await auction.status()).toBe(BigInt(AuctionStatus.Paused)); // not written until a transaction needs it
    await bid(c, auction, b1, E18, { at: t0 + 200 });
    expect(await auction.status()).toBe(BigInt(AuctionStatus.Running));

    await mineAt(c, t0 + 1_050);
    expect(await auction.getStatus()).toBe(BigInt(AuctionStatus.Ended));
    expect(await auction.status()).toBe(BigInt(AuctionStatus.Running));
    // A bid after the end reverts, and so nothing it did (not even the lazy end) is kept.
    await expectRevert(bid(c, auction, b2, E18), "AuctionNotRunning", [BigInt(AuctionStatus.Ended)]);
    expect(await auction.status()).toBe(BigInt(AuctionStatus.Running));

    const receipt = await send(withRunner(auction, signer(c, b2)).manualFinish());
    // AuctionFinished reports the real end (start + 1,000 + 50), not the time of the call.
    expect([...eventIn(receipt, "AuctionFinished")]).toEqual([BigInt(t0 + 1_050), E18]);
    expect(await auction.status()).toBe(BigInt(AuctionStatus.Ended));
    expect(namesIn(await send(withRunner(auction, signer(c, b2)).manualFinish()))).toEqual([]);
  });

  it("force-finishes a paused auction at the time of the call", async () => {
    const c = chain();
    const { hash, auction } = await launch(c);
    const t0 = await start(c, auction, 1_000);
    await setNextBlockTimestamp(c.provider, t0 + 10);
    await send(c.factory.pauseAuction(hash, 500));
    await setNextBlockTimestamp(c.provider, t0 + 20);
    const receipt = await send(c.factory.forceFinishAuction(hash));
    expect([...eventIn(receipt, "AuctionFinished")]).toEqual([BigInt(t0 + 20), E18]);
    expect(await auction.getStatus()).toBe(BigInt(AuctionStatus.Ended));
  });
});

describe("project wallet", () => {
  it("can be moved by the proposer until the end; bids pay the new wallet, which may not bid", async () => {
    const c = chain();
    const { hash, auction } = await launch(c);
    const wallet = addr(c, b2);
    await expectRevert(withRunner(auction, signer(c, b1)).setProjectWallet(wallet), "NotProposer", [
      addr(c, b1),
    ]);
    await expectRevert(
      auction.setProjectWallet("0x0000000000000000000000000000000000000000"),
      "InvalidAddress",
    );
    const self = await auction.getAddress();
    await expectRevert(auction.setProjectWallet(self), "InvalidAddress");
    const receipt = await send(auction.setProjectWallet(wallet));
    expect(eventIn(receipt, "ProjectWalletChanged").wallet).toBe(wallet);

    await start(c, auction, 1_000);
    const before = await c.bidCoin.balanceOf(wallet);
    await bid(c, auction, b1, 10n * E18);
    expect((await c.bidCoin.balanceOf(wallet)) - before).toBe(10n * E18);
    await expectRevert(bid(c, auction, b2, E18), "ProposerCannotBid", [wallet]);

    await send(c.factory.forceFinishAuction(hash));
    await expectRevert(auction.setProjectWallet(addr(c, b1)), "AuctionAlreadyEnded");
  });
});

describe("multicall", () => {
  it("reads several getters in one call, as the web client does", async () => {
    const c = chain();
    const { auction } = await launch(c);
    const calls = ["getStatus", "getCurrentRate", "numberOfTokensToBeDistributed"].map((name) =>
      auction.interface.encodeFunctionData(name),
    );
    const results: string[] = await auction.multicall.staticCall(calls);
    const decoded = results.map(
      (data, i) => auction.interface.decodeFunctionResult(calls[i]!.slice(0, 10), data)[0],
    );
    expect(decoded).toEqual([BigInt(AuctionStatus.Off), E18, 100n * E18]);
  });
});
