import { describe, expect, it } from "vitest";
import { withRunner } from "../src/contracts.ts";
import { addr, E18, eventIn, expectRevert, namesIn, roles, send, signer, useChain } from "./helpers.ts";

const chain = useChain();
const user = roles.proposer;

describe("BidCoin", () => {
  it("wraps the stablecoin 1:1 with Mint, Burn and Recover events", async () => {
    const c = chain();
    expect(await c.bidCoin.underlying()).toBe(await c.stablecoin.getAddress());
    expect([await c.bidCoin.name(), await c.bidCoin.symbol(), await c.bidCoin.decimals()]).toEqual([
      "SUCoin",
      "SUC",
      18n,
    ]);
    await send(c.stablecoin.mint(addr(c, user), 100n * E18));
    const stable = withRunner(c.stablecoin, signer(c, user));
    const coin = withRunner(c.bidCoin, signer(c, user));

    await send(stable.approve(c.deployment.bidCoin, 60n * E18));
    const deposit = await send(coin.depositFor(addr(c, user), 60n * E18));
    expect(namesIn(deposit, c.deployment.bidCoin)).toEqual(["Transfer", "Mint"]);
    expect([...eventIn(deposit, "Mint")]).toEqual([addr(c, user), 60n * E18]);
    expect(await c.bidCoin.balanceOf(addr(c, user))).toBe(60n * E18);

    const withdrawal = await send(coin.withdrawTo(addr(c, roles.bidders[0]), 25n * E18));
    expect([...eventIn(withdrawal, "Burn")]).toEqual([addr(c, user), 25n * E18]);
    expect(await c.bidCoin.balanceOf(addr(c, user))).toBe(35n * E18);
    expect(await c.stablecoin.balanceOf(addr(c, roles.bidders[0]))).toBe(25n * E18);

    // Stablecoin sent by plain transfer is not lost: anyone may mint its wrapped value to an account.
    await send(stable.transfer(c.deployment.bidCoin, 5n * E18));
    const recovered = await send(withRunner(c.bidCoin, signer(c, roles.bidders[1])).recover(addr(c, user)));
    expect([...eventIn(recovered, "Recover")]).toEqual([addr(c, user), 5n * E18]);
    expect(await c.bidCoin.balanceOf(addr(c, user))).toBe(40n * E18);

    await expectRevert(coin.withdrawTo(addr(c, user), 41n * E18), "ERC20InsufficientBalance", [
      addr(c, user),
      40n * E18,
      41n * E18,
    ]);
  });

  it("lets only the deployer mint the stand-in stablecoin", async () => {
    const c = chain();
    await expectRevert(
      withRunner(c.stablecoin, signer(c, user)).mint(addr(c, user), 1n),
      "OwnableUnauthorizedAccount",
      [addr(c, user)],
    );
  });
});
