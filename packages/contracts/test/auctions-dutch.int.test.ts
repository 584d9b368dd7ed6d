import { describe, expect, it } from "vitest";
import { AuctionStatus } from "../src/auction-types.ts";
import { withRunner } from "../src/contracts.ts";
import { setNextBlockTimestamp } from "../src/testing.ts";
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
const [b1, b2, b3] = roles.bidders;

/** The two forms of BidSubmission: a Dutch type emits only the first, with the price of its block. */
const DUTCH_BID = "BidSubmission(address,uint256,uint256)";
const PLAIN_BID = "BidSubmission(address,uint256)";

/** Price 10 -> 2 coins per token over 1,000 running seconds: it falls 0.008 coin per second. */
const dutch = { supply: 100n * E18, rate: 10n * E18, finalRate: 2n * E18 };

describe("DutchAuction", () => {
  it("prices bids on the linear fall, stands still while paused and ends at the final rate", async () => {
    const c = chain();
    const { hash, auction, address, token } = await createAuction(c, "DutchAuction", dutch);
    const t0 = await start(c, auction, 1_000);
    expect(await auction.getCurrentRate()).toBe(10n * E18);

    // +250 s: 10 - 8 * 250 / 1000 = 8 coins per token; 80 coins buy 10 tokens.
    const first = await bid(c, auction, b1, 80n * E18, { at: t0 + 250 });
    expect([...eventIn(first, "TokenBought")]).toEqual([addr(c, b1), 80n * E18, 10n * E18]);
    // The spec's Dutch form of BidSubmission (charge and price), instead of the two-argument form.
    expect([...eventIn(first, DUTCH_BID, address)]).toEqual([addr(c, b1), 80n * E18, 8n * E18]);
    expect(eventsIn(first).filter((e) => e.signature === PLAIN_BID)).toEqual([]);
    expect(
      eventsIn(first).filter((e) => e.name === "VariableChange" && e.args.variable === "currentRate")[0]?.args
        .value,
    ).toBe(8n * E18);
    expect(await token.balanceOf(addr(c, b1))).toBe(10n * E18);

    // +333 s: 10 - 8 * 0.333 = 7.336 coins per token. 10 coins buy floor(10 / 7.336 * 1e18) units
    // = 1363140676117775354, costing ceil(1363140676117775354 * 7.336) = 9999999999999999997 base units.
    const second = await bid(c, auction, b2, 10n * E18, { at: t0 + 333 });
    expect([...eventIn(second, "TokenBought")]).toEqual([
      addr(c, b2),
      9999999999999999997n,
      1363140676117775354n,
    ]);
    expect([...eventIn(second, DUTCH_BID)]).toEqual([addr(c, b2), 9999999999999999997n, 7_336n * 10n ** 15n]);

    // Paused at +500 (price 6) for 300 s: the price holds until the auction runs again.
    await setNextBlockTimestamp(c.provider, t0 + 500);
    await send(c.factory.pauseAuction(hash, 300));
    await mineAt(c, t0 + 700);
    expect(await auction.getCurrentRate()).toBe(6n * E18); // 10 - 8 * 500 / 1000
    await mineAt(c, t0 + 800);
    expect(await auction.getCurrentRate()).toBe(6n * E18); // still 500 running seconds

    // +1,050 s is 750 running seconds: 10 - 8 * 0.75 = 4 coins; 100 coins buy 25 tokens.
    const third = await bid(c, auction, b3, 100n * E18, { at: t0 + 1_050 });
    expect([...eventIn(third, "TokenBought")]).toEqual([addr(c, b3), 100n * E18, 25n * E18]);

    await mineAt(c, t0 + 1_300); // 1,000 s + 300 s of pause
    expect(await auction.getStatus()).toBe(BigInt(AuctionStatus.Ended));
    expect(await auction.getCurrentRate()).toBe(2n * E18);
    const end = await send(withRunner(auction, signer(c, b1)).manualFinish());
    expect([...eventIn(end, "AuctionFinished", address)]).toEqual([BigInt(t0 + 1_300), 2n * E18]);
    // Unsold: 100 - 10 - 1.363140676117775354 - 25 = 63.636859323882224646 tokens back to the proposer.
    expect(await token.balanceOf(addr(c, roles.proposer))).toBe(1_000n * E18 + 63636859323882224646n);
    expect(await token.balanceOf(address)).toBe(0n);
  });

  it("ends on sell-out at the price of the last purchase", async () => {
    const c = chain();
    const { auction, address } = await createAuction(c, "DutchAuction", { ...dutch, supply: 10n * E18 });
    const t0 = await start(c, auction, 1_000);
    const before = await c.bidCoin.balanceOf(addr(c, b1));
    // +500 s: price 6; 100 coins would buy 16.67 tokens, only 10 are left: they cost 60.
    const receipt = await bid(c, auction, b1, 100n * E18, { at: t0 + 500 });
    expect([...eventIn(receipt, "TokenBought")]).toEqual([addr(c, b1), 60n * E18, 10n * E18]);
    expect([...eventIn(receipt, "AuctionFinished", address)]).toEqual([BigInt(t0 + 500), 6n * E18]);
    expect(before - (await c.bidCoin.balanceOf(addr(c, b1)))).toBe(60n * E18);
    expect(await auction.getCurrentRate()).toBe(6n * E18); // frozen once ended
  });
});

describe("StrictDutchAuction", () => {
  it("shrinks the supply over time, ends when sold reaches it, and burns the rest", async () => {
    const c = chain();
    const { auction, address, token } = await createAuction(c, "StrictDutchAuction", dutch);
    expect(await auction.getTotalSupply()).toBe(100n * E18);
    const t0 = await start(c, auction, 1_000);

    // +250 s: supply 100 * 750 / 1000 = 75 tokens, price 8; 400 coins buy 50 tokens.
    const first = await bid(c, auction, b1, 400n * E18, { at: t0 + 250 });
    expect([...eventIn(first, "TokenBought")]).toEqual([addr(c, b1), 400n * E18, 50n * E18]);
    expect([...eventIn(first, DUTCH_BID, address)]).toEqual([addr(c, b1), 400n * E18, 8n * E18]);
    expect(eventsIn(first).filter((e) => e.signature === PLAIN_BID)).toEqual([]);
    const supplyChange = eventsIn(first).find(
      (e) => e.name === "VariableChange" && e.args.variable === "numberOfTokensToBeDistributed",
    );
    expect(supplyChange?.args.value).toBe(75n * E18);

    await mineAt(c, t0 + 400);
    expect(await auction.getTotalSupply()).toBe(60n * E18); // 100 * 600 / 1000
    expect(await auction.getStatus()).toBe(BigInt(AuctionStatus.Running));
    await mineAt(c, t0 + 500);
    expect(await auction.getTotalSupply()).toBe(50n * E18); // 100 * 500 / 1000 = 50 = sold
    expect(await auction.getStatus()).toBe(BigInt(AuctionStatus.Ended));
    await expectRevert(bid(c, auction, b2, E18), "AuctionNotRunning", [BigInt(AuctionStatus.Ended)]);

    const totalBefore = await token.totalSupply(); // 1,000 (proposer) + 100 (auction)
    expect(totalBefore).toBe(1_100n * E18);
    await setNextBlockTimestamp(c.provider, t0 + 510);
    const end = await send(withRunner(auction, signer(c, b2)).manualFinish());
    // Ended by supply, not time: reported at the call, price 10 - 8 * 0.51 = 5.92.
    expect([...eventIn(end, "AuctionFinished", address)]).toEqual([
      BigInt(t0 + 510),
      5_920_000_000_000_000_000n,
    ]);
    expect(await token.totalSupply()).toBe(1_050n * E18); // the 50 unsold tokens are burned
    expect(await token.balanceOf(address)).toBe(0n);
    expect(await auction.numberOfTokensToBeDistributed()).toBe(50n * E18);
  });

  it("caps a bid at the supply on sale now and ends at once when it takes all of it", async () => {
    const c = chain();
    const { auction, address, token } = await createAuction(c, "StrictDutchAuction", dutch);
    const t0 = await start(c, auction, 1_000);
    // +600 s: supply 100 * 400 / 1000 = 40, price 10 - 8 * 0.6 = 5.2; 40 tokens cost 208 coins.
    const receipt = await bid(c, auction, b1, 1_000n * E18, { at: t0 + 600 });
    expect([...eventIn(receipt, "TokenBought")]).toEqual([addr(c, b1), 208n * E18, 40n * E18]);
    expect(namesIn(receipt, address)).toContain("AuctionFinished");
    expect([...eventIn(receipt, "AuctionFinished", address)]).toEqual([
      BigInt(t0 + 600),
      5_200_000_000_000_000_000n,
    ]);
    expect(await token.totalSupply()).toBe(1_040n * E18); // 60 unsold burned
    expect(await token.balanceOf(addr(c, b1))).toBe(40n * E18);
  });

  it("burns everything when nobody bought before the time ran out", async () => {
    const c = chain();
    const { auction, address, token } = await createAuction(c, "StrictDutchAuction", dutch);
    const t0 = await start(c, auction, 1_000);
    await mineAt(c, t0 + 1_000);
    const end = await send(withRunner(auction, signer(c, b3)).manualFinish());
    expect([...eventIn(end, "AuctionFinished", address)]).toEqual([BigInt(t0 + 1_000), 2n * E18]);
    expect(await token.totalSupply()).toBe(1_000n * E18);
  });
});
