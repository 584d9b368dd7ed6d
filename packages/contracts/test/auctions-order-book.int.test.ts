import { describe, expect, it } from "vitest";
import { AuctionStatus } from "../src/auction-types.ts";
import { withRunner } from "../src/contracts.ts";
import {
  addr,
  bid,
  createAuction,
  E18,
  eventIn,
  eventsIn,
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
const [b1, b2, b3, b4] = roles.bidders;

const DUTCH_BID = "BidSubmission(address,uint256,uint256)";

function progress(receipt: Parameters<typeof eventsIn>[0], variable: string): bigint | undefined {
  const found = eventsIn(receipt).filter((e) => e.name === "VariableChange" && e.args.variable === variable);
  return found.at(-1)?.args.value as bigint | undefined;
}

describe("PseudoCappedAuction", () => {
  it("shares the whole supply pro rata among deposits, within the per-bidder limit", async () => {
    const c = chain();
    const { auction, address, token } = await createAuction(c, "PseudoCappedAuction", {
      supply: 90n * E18,
      limit: 50n * E18,
    });
    const t0 = await start(c, auction, 1_000);
    const walletBefore = await c.bidCoin.balanceOf(addr(c, roles.proposer));

    const first = await bid(c, auction, b1, 30n * E18);
    expect(progress(first, "currentRate")).toBe(333333333333333333n); // 30 / 90 tokens, rounded down
    expect([...eventIn(first, "BidSubmission(address,uint256)", address)]).toEqual([addr(c, b1), 30n * E18]);
    await bid(c, auction, b2, 20n * E18);
    const third = await bid(c, auction, b1, 10n * E18);
    expect(progress(third, "currentRate")).toBe(666666666666666666n); // 60 / 90
    await expectRevert(bid(c, auction, b2, 40n * E18), "LimitExceeded", [60n * E18, 50n * E18]); // 20 + 40 > 50
    expect((await c.bidCoin.balanceOf(addr(c, roles.proposer))) - walletBefore).toBe(60n * E18);
    await expectRevert(withRunner(auction, signer(c, b1)).withDraw(), "AuctionNotEnded", [
      BigInt(AuctionStatus.Running),
    ]);

    await mineAt(c, t0 + 1_000);
    const claim2 = await send(withRunner(auction, signer(c, b2)).withDraw());
    expect(namesIn(claim2, address)).toEqual(["VariableChange", "AuctionFinished", "Claimed", "ClaimTokens"]);
    expect([...eventIn(claim2, "AuctionFinished")]).toEqual([BigInt(t0 + 1_000), 666666666666666666n]);
    expect([...eventIn(claim2, "Claimed")]).toEqual([addr(c, b2), 30n * E18, 0n]); // 20 * 90 / 60
    expect([...eventIn(claim2, "ClaimTokens")]).toEqual([0n, 30n * E18]); // round 0: one round
    const claim1 = await send(withRunner(auction, signer(c, b1)).withDraw());
    expect([...eventIn(claim1, "Claimed")]).toEqual([addr(c, b1), 60n * E18, 0n]); // 40 * 90 / 60
    await expectRevert(withRunner(auction, signer(c, b1)).withDraw(), "NothingToClaim", [addr(c, b1)]);
    await expectRevert(withRunner(auction, signer(c, b3)).withDraw(), "NothingToClaim", [addr(c, b3)]);
    expect(await auction.soldProjectTokens()).toBe(90n * E18);
    expect(await token.balanceOf(address)).toBe(0n);
  });

  it("gives the rounding remainder to the last claimer", async () => {
    const c = chain();
    // 100 token units shared by three 1-unit deposits: 100 / 3 = 33.33 each.
    const { auction, address, token } = await createAuction(c, "PseudoCappedAuction", { supply: 100n });
    const t0 = await start(c, auction, 1_000);
    for (const b of [b1, b2, b3]) await bid(c, auction, b, 1n);
    expect(await auction.getCurrentRate()).toBe(30_000_000_000_000_000n); // 3 * 1e18 / 100
    await mineAt(c, t0 + 1_000);
    const claims: bigint[] = [];
    for (const b of [b1, b2, b3]) {
      claims.push(
        eventIn(await send(withRunner(auction, signer(c, b)).withDraw()), "Claimed").tokenAmount as bigint,
      );
    }
    expect(claims).toEqual([33n, 33n, 34n]); // floor(100 / 3) twice, then 100 - 66
    expect(await token.balanceOf(address)).toBe(0n);
  });

  it("burns the supply when nobody bid", async () => {
    const c = chain();
    const { hash, auction, address, token } = await createAuction(c, "PseudoCappedAuction", {
      supply: 90n * E18,
    });
    await start(c, auction, 1_000);
    const end = await send(c.factory.forceFinishAuction(hash));
    expect(eventIn(end, "AuctionFinished", address).finalPrice).toBe(0n);
    expect(await token.totalSupply()).toBe(1_000n * E18);
  });
});

describe("OBDutchAuction", () => {
  it("clears at one uniform price: higher orders fill, the marginal one partly, lower ones are refunded", async () => {
    const c = chain();
    const { auction, address, token } = await createAuction(c, "OBDutchAuction", {
      supply: 100n * E18,
      finalRate: E18,
    });
    const t0 = await start(c, auction, 1_000);
    expect(await auction.minPrice()).toBe(E18); // the reserve price

    // b1: 300 coins at 3 -> 100 tokens: demand meets supply, so a new order must beat 3.
    const o1 = await bid(c, auction, b1, 300n * E18, { price: 3n * E18 });
    expect([...eventIn(o1, "OrderPlaced")]).toEqual([addr(c, b1), 3n * E18, 100n * E18, 300n * E18]);
    // The spec's Dutch form of BidSubmission (deposit, order price) beside OrderPlaced; no plain form.
    expect([...eventIn(o1, DUTCH_BID, address)]).toEqual([addr(c, b1), 300n * E18, 3n * E18]);
    expect(namesIn(o1, address).filter((n) => n === "BidSubmission")).toHaveLength(1);
    expect(progress(o1, "minPrice")).toBe(3n * E18 + 1n);
    expect(progress(o1, "currentRate")).toBe(3n * E18);
    // b2: 200 coins at 4 -> 50 tokens; demand above 3 is 50 < 100, so price level 3 still counts.
    await bid(c, auction, b2, 200n * E18, { price: 4n * E18 });
    expect(await auction.getCurrentRate()).toBe(3n * E18);
    // b3: 250 coins at 5 -> 50 tokens; demand above 3 is now 100: level 3 can never fill and drops out.
    const o3 = await bid(c, auction, b3, 250n * E18, { price: 5n * E18 });
    expect(progress(o3, "currentRate")).toBe(4n * E18);
    expect(progress(o3, "minPrice")).toBe(4n * E18 + 1n);
    await expectRevert(bid(c, auction, b4, 40n * E18, { price: 4n * E18 }), "PriceTooLow", [
      4n * E18,
      4n * E18 + 1n,
    ]);
    // b4: 90 coins at 4.5 -> 20 tokens. Above 4: 50 + 20 = 70; 30 of b2's 50 fill at 4.
    await bid(c, auction, b4, 90n * E18, { price: 4_500_000_000_000_000_000n });
    await expectRevert(bid(c, auction, b2, 10n * E18, { price: 9n * E18 }), "AlreadyBid", [addr(c, b2)]);
    expect(await c.bidCoin.balanceOf(address)).toBe(840n * E18); // 300 + 200 + 250 + 90 held
    expect(await auction.activeDemand()).toBe(120n * E18); // 50 @ 4 + 50 @ 5 + 20 @ 4.5; level 3 dropped
    expect(await auction.demandAt(3n * E18)).toBe(100n * E18);
    const order = await auction.orders(addr(c, b2));
    expect([order.price, order.tokens, order.deposit, order.queuedBefore, order.claimed]).toEqual([
      4n * E18,
      50n * E18,
      200n * E18,
      0n,
      false,
    ]);

    await mineAt(c, t0 + 1_000);
    const walletBefore = await c.bidCoin.balanceOf(addr(c, roles.proposer));
    const claims: Record<number, bigint[]> = {};
    for (const b of [b1, b2, b3, b4]) {
      const receipt = await send(withRunner(auction, signer(c, b)).withDraw());
      if (b === b1) expect([...eventIn(receipt, "AuctionFinished")]).toEqual([BigInt(t0 + 1_000), 4n * E18]);
      const claimed = eventIn(receipt, "Claimed");
      claims[b] = [claimed.tokenAmount as bigint, claimed.refundAmount as bigint];
      // ClaimTokens right after Claimed, with its tokens: 0 for b1's refund-only claim.
      expect(namesIn(receipt, address).slice(-2)).toEqual(["Claimed", "ClaimTokens"]);
      expect([...eventIn(receipt, "ClaimTokens")]).toEqual([0n, claims[b]![0]]);
    }
    expect(claims[b1]).toEqual([0n, 300n * E18]); // price 3 < 4: everything back
    expect(claims[b2]).toEqual([30n * E18, 80n * E18]); // 30 tokens * 4 = 120 paid of 200
    expect(claims[b3]).toEqual([50n * E18, 50n * E18]); // 50 * 4 = 200 paid of 250
    expect(claims[b4]).toEqual([20n * E18, 10n * E18]); // 20 * 4 = 80 paid of 90
    expect((await c.bidCoin.balanceOf(addr(c, roles.proposer))) - walletBefore).toBe(400n * E18); // 100 * 4
    expect(await auction.clearingPrice()).toBe(4n * E18);
    expect(await auction.marginalAllocation()).toBe(30n * E18);
    expect(await c.bidCoin.balanceOf(address)).toBe(0n);
    expect(await token.balanceOf(address)).toBe(0n);
    await expectRevert(withRunner(auction, signer(c, b1)).withDraw(), "NothingToClaim", [addr(c, b1)]);
  });

  it("fills orders at the clearing price in the order they were placed", async () => {
    const c = chain();
    const { auction, address } = await createAuction(c, "OBDutchAuction", { supply: 10n * E18 });
    const t0 = await start(c, auction, 1_000);
    await bid(c, auction, b1, 16n * E18, { price: 2n * E18 }); // 8 tokens at 2
    await bid(c, auction, b2, 16n * E18, { price: 2n * E18 }); // 8 more at 2, behind b1
    await bid(c, auction, b3, 12n * E18, { price: 3n * E18 }); // 4 tokens at 3
    await mineAt(c, t0 + 1_000);
    const claim = async (b: number) => {
      const args = eventIn(await send(withRunner(auction, signer(c, b)).withDraw()), "Claimed", address);
      return [args.tokenAmount, args.refundAmount];
    };
    // Clearing price 2; 10 - 4 above = 6 tokens for level 2: all to b1 (first), none to b2.
    expect(await claim(b1)).toEqual([6n * E18, 4n * E18]); // pays 6 * 2 = 12 of 16
    expect(await claim(b2)).toEqual([0n, 16n * E18]);
    expect(await claim(b3)).toEqual([4n * E18, 4n * E18]); // pays 4 * 2 = 8 of 12
  });

  it("fills everything at the lowest order's price when undersubscribed and returns the rest of the supply", async () => {
    const c = chain();
    const { auction, address, token } = await createAuction(c, "OBDutchAuction", {
      supply: 100n * E18,
      finalRate: E18,
    });
    const t0 = await start(c, auction, 1_000);
    await bid(c, auction, b1, 10n * E18, { price: 2n * E18 }); // 5 tokens
    await bid(c, auction, b2, 7n * E18, { price: 3_500_000_000_000_000_000n }); // 2 tokens at 3.5
    await bid(c, auction, b3, 3n * E18); // bid(amount) orders at minPrice = the reserve, 1: 3 tokens
    const walletTokens = await token.balanceOf(addr(c, roles.proposer));
    const walletCoins = await c.bidCoin.balanceOf(addr(c, roles.proposer));
    await mineAt(c, t0 + 1_000);
    const end = await send(withRunner(auction, signer(c, b1)).withDraw());
    expect(eventIn(end, "AuctionFinished").finalPrice).toBe(E18);
    expect([...eventIn(end, "Claimed")]).toEqual([addr(c, b1), 5n * E18, 5n * E18]); // pays 5 * 1 of 10
    expect((await c.bidCoin.balanceOf(addr(c, roles.proposer))) - walletCoins).toBe(10n * E18); // 10 sold * 1
    expect((await token.balanceOf(addr(c, roles.proposer))) - walletTokens).toBe(90n * E18); // 100 - 10 sold
    const c2 = eventIn(await send(withRunner(auction, signer(c, b2)).withDraw()), "Claimed");
    expect([c2.tokenAmount, c2.refundAmount]).toEqual([2n * E18, 5n * E18]); // pays 2 * 1 of 7
    const c3 = eventIn(await send(withRunner(auction, signer(c, b3)).withDraw()), "Claimed");
    expect([c3.tokenAmount, c3.refundAmount]).toEqual([3n * E18, 0n]);
    expect(await c.bidCoin.balanceOf(address)).toBe(0n);
  });

  it("charges each bidder rounded up and pays the project rounded down, leaving at most dust", async () => {
    const c = chain();
    const { auction, address } = await createAuction(c, "OBDutchAuction", { supply: 3n });
    const t0 = await start(c, auction, 1_000);
    const price = 2_500_000_000_000_000_000n; // 2.5 coins per token
    // 7 base units buy floor(7 / 2.5) = 2 units, deposit ceil(2 * 2.5) = 5; 3 buy 1 unit, deposit ceil(2.5) = 3.
    expect(eventIn(await bid(c, auction, b1, 7n, { price }), "OrderPlaced").deposit).toBe(5n);
    expect(eventIn(await bid(c, auction, b2, 3n, { price }), "OrderPlaced").deposit).toBe(3n);
    const walletBefore = await c.bidCoin.balanceOf(addr(c, roles.proposer));
    await mineAt(c, t0 + 1_000);
    await send(withRunner(auction, signer(c, b1)).withDraw());
    await send(withRunner(auction, signer(c, b2)).withDraw());
    expect((await c.bidCoin.balanceOf(addr(c, roles.proposer))) - walletBefore).toBe(7n); // floor(3 * 2.5)
    expect(await c.bidCoin.balanceOf(address)).toBe(1n); // 5 + 3 - 7: one unit of dust
  });

  it("returns the whole supply when a forced finish meets no orders", async () => {
    const c = chain();
    const { hash, auction, address, token } = await createAuction(c, "OBDutchAuction", {
      supply: 100n * E18,
    });
    await start(c, auction, 1_000);
    const end = await send(c.factory.forceFinishAuction(hash));
    expect(eventIn(end, "AuctionFinished", address).finalPrice).toBe(0n);
    expect(await token.balanceOf(addr(c, roles.proposer))).toBe(1_100n * E18);
    expect(await auction.getCurrentRate()).toBe(0n);
  });
});
