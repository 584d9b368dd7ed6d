import { describe, expect, it } from "vitest";
import { AuctionStatus } from "../src/auction-types.ts";
import { withRunner } from "../src/contracts.ts";
import { setNextBlockTimestamp } from "../src/testing.ts";
import {
  addr,
  bid,
  type Chain,
  createAuction,
  E18,
  eventIn,
  expectRevert,
  MINTER_ROLE,
  mineAt,
  namesIn,
  roles,
  send,
  signer,
  start,
  useChain,
} from "./helpers.ts";

const chain = useChain();
const [b1, b2, b3] = roles.bidders;

async function bidCoinOf(c: Chain, index: number): Promise<bigint> {
  return await c.bidCoin.balanceOf(addr(c, index));
}

describe("UncappedAuction", () => {
  it("mints at a fixed price, charges only whole token units, and gives up minting at the end", async () => {
    const c = chain();
    const rate = 2_500_000_000_000_000_000n; // 2.5 bid coin per token
    const { hash, auction, address, token } = await createAuction(c, "UncappedAuction", { rate });
    const t0 = await start(c, auction, 1_000);
    const wallet = addr(c, roles.proposer);
    const walletBefore = await bidCoinOf(c, roles.proposer);

    const first = await bid(c, auction, b1, 10n * E18);
    // 10 coins / 2.5 per token = 4 tokens, costing exactly 10 coins.
    expect([...eventIn(first, "TokenBought")]).toEqual([addr(c, b1), 10n * E18, 4n * E18]);
    // The spec's plain form of BidSubmission: a non-Dutch type never emits the form with a price.
    expect([...eventIn(first, "BidSubmission(address,uint256)", address)]).toEqual([addr(c, b1), 10n * E18]);
    expect(namesIn(first).filter((n) => n === "BidSubmission")).toHaveLength(1);
    expect(await token.balanceOf(addr(c, b1))).toBe(4n * E18);
    expect((await c.bidCoin.balanceOf(wallet)) - walletBefore).toBe(10n * E18);

    // Rounding: 7 base units buy floor(7 / 2.5) = 2 token units, which cost ceil(2 * 2.5) = 5 base units.
    const b2Before = await bidCoinOf(c, b2);
    const small = await bid(c, auction, b2, 7n);
    expect([...eventIn(small, "TokenBought")]).toEqual([addr(c, b2), 5n, 2n]);
    expect(b2Before - (await bidCoinOf(c, b2))).toBe(5n);
    // 2 base units buy floor(2 / 2.5) = 0 token units.
    await expectRevert(bid(c, auction, b2, 2n), "BidTooSmall", [2n]);
    expect(await auction.soldProjectTokens()).toBe(4n * E18 + 2n);
    expect(await auction.totalDepositedSucoins()).toBe(10n * E18 + 5n);
    expect(await token.totalSupply()).toBe(1_004n * E18 + 2n); // 1,000 to the proposer + 4 tokens + 2 units minted

    await setNextBlockTimestamp(c.provider, t0 + 100);
    await send(c.factory.pauseAuction(hash, 100));
    await expectRevert(bid(c, auction, b3, E18), "AuctionNotRunning", [BigInt(AuctionStatus.Paused)]);
    await bid(c, auction, b3, 5n * E18, { at: t0 + 200 }); // 5 / 2.5 = 2 tokens after the pause

    await mineAt(c, t0 + 1_100);
    expect(await auction.getStatus()).toBe(BigInt(AuctionStatus.Ended));
    const end = await send(withRunner(auction, signer(c, b1)).manualFinish());
    expect([...eventIn(end, "AuctionFinished", address)]).toEqual([BigInt(t0 + 1_100), rate]);
    expect(await token.hasRole(MINTER_ROLE, address)).toBe(false);
    expect(await auction.soldProjectTokens()).toBe(6n * E18 + 2n);
    await expectRevert(withRunner(auction, signer(c, b1)).withDraw(), "NothingToClaim", [addr(c, b1)]);
  });
});

describe("FCFSAuction", () => {
  it("delivers at once, sells the remainder to a larger bid and ends on sell-out", async () => {
    const c = chain();
    const rate = 2n * E18;
    const { auction, address, token } = await createAuction(c, "FCFSAuction", { supply: 100n * E18, rate });
    const t0 = await start(c, auction, 1_000);
    const walletBefore = await bidCoinOf(c, roles.proposer);

    const first = await bid(c, auction, b1, 50n * E18, { at: t0 + 10 });
    expect([...eventIn(first, "TokenBought")]).toEqual([addr(c, b1), 50n * E18, 25n * E18]); // 50 / 2 = 25 tokens
    expect(await token.balanceOf(addr(c, b1))).toBe(25n * E18);

    // 75 tokens are left: a 200-coin bid buys them for 75 * 2 = 150 coins and keeps the other 50.
    const b2Before = await bidCoinOf(c, b2);
    const last = await bid(c, auction, b2, 200n * E18, { at: t0 + 20 });
    expect([...eventIn(last, "TokenBought")]).toEqual([addr(c, b2), 150n * E18, 75n * E18]);
    expect(b2Before - (await bidCoinOf(c, b2))).toBe(150n * E18);
    expect(namesIn(last, address)).toContain("AuctionFinished");
    expect([...eventIn(last, "AuctionFinished", address)]).toEqual([BigInt(t0 + 20), rate]);
    expect(await auction.status()).toBe(BigInt(AuctionStatus.Ended));
    expect(await token.balanceOf(address)).toBe(0n);
    expect((await bidCoinOf(c, roles.proposer)) - walletBefore).toBe(200n * E18); // 50 + 150
    await expectRevert(bid(c, auction, b3, E18), "AuctionNotRunning", [BigInt(AuctionStatus.Ended)]);
  });

  it("applies the per-bidder limit and returns unsold supply to the project wallet", async () => {
    const c = chain();
    const { auction, address, token } = await createAuction(c, "FCFSAuction", {
      supply: 100n * E18,
      rate: 2n * E18,
      limit: 60n * E18,
    });
    const t0 = await start(c, auction, 1_000);
    await bid(c, auction, b1, 40n * E18);
    await expectRevert(bid(c, auction, b1, 30n * E18), "LimitExceeded", [70n * E18, 60n * E18]); // 40 + 30 > 60
    await bid(c, auction, b1, 20n * E18); // exactly the limit: 60 coins = 30 tokens
    expect(await auction.biddingBook(addr(c, b1))).toBe(60n * E18);

    await mineAt(c, t0 + 1_000);
    const end = await send(withRunner(auction, signer(c, b2)).manualFinish());
    expect([...eventIn(end, "AuctionFinished", address)]).toEqual([BigInt(t0 + 1_000), 2n * E18]);
    // 100 - 30 sold = 70 tokens go back to the proposer, who already held 1,000.
    expect(await token.balanceOf(addr(c, roles.proposer))).toBe(1_070n * E18);
    expect(await token.balanceOf(address)).toBe(0n);
  });

  it("rounds a bid down to whole token units", async () => {
    const c = chain();
    const { auction } = await createAuction(c, "FCFSAuction", { supply: 100n * E18, rate: 3n * E18 });
    await start(c, auction, 1_000);
    const before = await bidCoinOf(c, b1);
    // 10 base units at 3 per token buy floor(10 / 3) = 3 units, costing ceil(3 * 3) = 9.
    const receipt = await bid(c, auction, b1, 10n);
    expect([...eventIn(receipt, "TokenBought")]).toEqual([addr(c, b1), 9n, 3n]);
    expect(before - (await bidCoinOf(c, b1))).toBe(9n);
  });
});

describe("OBFCFSAuction", () => {
  it("books tokens at bid time, pays the wallet at once and hands tokens out after the end", async () => {
    const c = chain();
    const { auction, address, token } = await createAuction(c, "OBFCFSAuction", {
      supply: 100n * E18,
      rate: 2n * E18,
    });
    await start(c, auction, 1_000);
    const walletBefore = await bidCoinOf(c, roles.proposer);

    const first = await bid(c, auction, b1, 40n * E18);
    expect([...eventIn(first, "TokenBought")]).toEqual([addr(c, b1), 40n * E18, 20n * E18]); // 40 / 2
    expect(await auction.tokensOwed(addr(c, b1))).toBe(20n * E18);
    expect(await token.balanceOf(addr(c, b1))).toBe(0n);
    expect((await bidCoinOf(c, roles.proposer)) - walletBefore).toBe(40n * E18);
    await expectRevert(withRunner(auction, signer(c, b1)).withDraw(), "AuctionNotEnded", [
      BigInt(AuctionStatus.Running),
    ]);

    // 80 tokens left: 300 coins buy them for 160 and the sell-out ends the auction.
    const last = await bid(c, auction, b2, 300n * E18);
    expect([...eventIn(last, "TokenBought")]).toEqual([addr(c, b2), 160n * E18, 80n * E18]);
    expect(namesIn(last, address)).toContain("AuctionFinished");
    expect([...eventIn(last, "BidSubmission(address,uint256)")]).toEqual([addr(c, b2), 160n * E18]);

    const claim = await send(withRunner(auction, signer(c, b1)).withDraw());
    expect(namesIn(claim, address)).toEqual(["Claimed", "ClaimTokens"]);
    expect([...eventIn(claim, "Claimed")]).toEqual([addr(c, b1), 20n * E18, 0n]);
    expect([...eventIn(claim, "ClaimTokens")]).toEqual([0n, 20n * E18]); // round 0, tokens
    expect(await token.balanceOf(addr(c, b1))).toBe(20n * E18);
    await expectRevert(withRunner(auction, signer(c, b1)).withDraw(), "NothingToClaim", [addr(c, b1)]);
    await send(withRunner(auction, signer(c, b2)).withDraw());
    expect(await token.balanceOf(addr(c, b2))).toBe(80n * E18);
    await expectRevert(withRunner(auction, signer(c, b3)).withDraw(), "NothingToClaim", [addr(c, b3)]);
    expect(await token.balanceOf(address)).toBe(0n);
  });

  it("returns unsold supply at a forced finish while keeping what bidders are owed", async () => {
    const c = chain();
    const { hash, auction, address, token } = await createAuction(c, "OBFCFSAuction", {
      supply: 100n * E18,
      rate: 2n * E18,
    });
    await start(c, auction, 1_000);
    await bid(c, auction, b1, 20n * E18); // 10 tokens owed
    const end = await send(c.factory.forceFinishAuction(hash));
    expect(namesIn(end, address)).toContain("AuctionFinished");
    expect(await token.balanceOf(addr(c, roles.proposer))).toBe(1_090n * E18); // 1,000 + (100 - 10) unsold
    expect(await token.balanceOf(address)).toBe(10n * E18);
    await send(withRunner(auction, signer(c, b1)).withDraw());
    expect(await token.balanceOf(addr(c, b1))).toBe(10n * E18);
  });
});
