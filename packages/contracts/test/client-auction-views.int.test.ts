// The auction getters the first implementation's web client reads: its auction page multicalls every
// zero-argument view of its own ABI for the type, so each must exist here, decode with the original output
// type and not revert, in every status.
import { Contract, id, ZeroHash } from "ethers";
import { describe, expect, it } from "vitest";
import { AUCTION_TYPES, AuctionStatus, type AuctionType } from "../src/auction-types.ts";
import { clientAuctionGetters, clientCappedAbi, readAllGetters } from "./client-abi.ts";
import {
  type AuctionParams,
  addr,
  type Chain,
  createAuction,
  E18,
  roles,
  send,
  start,
  useChain,
} from "./helpers.ts";

const chain = useChain();

const params: Record<AuctionType, AuctionParams> = {
  UncappedAuction: { rate: 2n * E18 },
  PseudoCappedAuction: { supply: 100n * E18 },
  OBFCFSAuction: { supply: 100n * E18, rate: 2n * E18 },
  FCFSAuction: { supply: 100n * E18, rate: 2n * E18 },
  DutchAuction: { supply: 100n * E18, rate: 10n * E18, finalRate: 2n * E18 },
  OBDutchAuction: { supply: 100n * E18, finalRate: E18 },
  StrictDutchAuction: { supply: 100n * E18, rate: 10n * E18, finalRate: 2n * E18 },
};

/** Reads every getter, checks the ones all types share, and returns the values by name. */
async function readAt(c: Chain, address: string, type: AuctionType, status: number) {
  const values = Object.fromEntries(
    Object.entries(await readAllGetters(address, type, c.provider)).map(([name, result]) => [
      name,
      result[0],
    ]),
  );
  expect(Object.keys(values).sort()).toEqual(clientAuctionGetters[type].map(([name]) => name).sort());
  expect(values.getStatus, `${type} getStatus`).toBe(BigInt(status));
  expect([values.DEFAULT_ADMIN_ROLE, values.PROPOSER_ROLE, values.PROPOSER_ADMIN_ROLE]).toEqual([
    ZeroHash,
    id("PROPOSER_ROLE"),
    id("PROPOSER_ADMIN_ROLE"),
  ]);
  expect(values.bidCoin).toBe(c.deployment.bidCoin);
  return values;
}

describe("auction page getters", () => {
  it.each(AUCTION_TYPES)("%s answers all of them, from creation to the end", async (type) => {
    const c = chain();
    const { hash, auction, address, token } = await createAuction(c, type, params[type]);
    const off = await readAt(c, address, type, AuctionStatus.Off);
    expect([off.startTime, off.latestEndTime, off.totalDepositedSucoins]).toEqual([0n, 0n, 0n]);
    expect(off.projectToken).toBe(await token.getAddress());

    const startedAt = await start(c, auction, 10_000);
    const running = await readAt(c, address, type, AuctionStatus.Running);
    expect([running.startTime, running.latestEndTime]).toEqual([
      BigInt(startedAt),
      BigInt(startedAt + 10_000),
    ]);

    await send(c.factory.pauseAuction(hash, 1_000));
    await readAt(c, address, type, AuctionStatus.Paused);
    await send(c.factory.forceFinishAuction(hash));
    await readAt(c, address, type, AuctionStatus.Ended);
  });

  it("answers the getters the first implementation had under other names", async () => {
    const c = chain();
    const uncapped = await createAuction(c, "UncappedAuction", params.UncappedAuction);
    const values = await readAt(c, uncapped.address, "UncappedAuction", AuctionStatus.Off);
    // Unlimited supply: the original's getter was never set.
    expect([values.MINTER_ROLE, values.numberOfTokensToBeDistributed]).toEqual([id("MINTER_ROLE"), 0n]);

    const strict = await createAuction(c, "StrictDutchAuction", params.StrictDutchAuction);
    const strictValues = await readAt(c, strict.address, "StrictDutchAuction", AuctionStatus.Off);
    expect([strictValues.initTokens, strictValues.getTotalSupply]).toEqual([100n * E18, 100n * E18]);

    const ob = await createAuction(c, "OBDutchAuction", params.OBDutchAuction);
    const obValues = await readAt(c, ob.address, "OBDutchAuction", AuctionStatus.Off);
    expect([obValues.proposerWallet, obValues.minPrice]).toEqual([addr(c, roles.proposer), E18]);
    await send(ob.auction.setProjectWallet(addr(c, roles.admin2)));
    const moved = await readAt(c, ob.address, "OBDutchAuction", AuctionStatus.Off);
    expect([moved.proposerWallet, moved.projectWallet]).toEqual([
      addr(c, roles.admin2),
      addr(c, roles.admin2),
    ]);
  });
});

describe("project page supply", () => {
  it("reads numberOfTokensToBeDistributed from every type through the capped ABI", async () => {
    const c = chain();
    for (const type of AUCTION_TYPES) {
      const { address } = await createAuction(c, type, params[type], `supply-${type}`);
      const capped = new Contract(address, clientCappedAbi, c.provider);
      expect(await capped.getFunction("numberOfTokensToBeDistributed")(), type).toBe(
        params[type].supply ?? 0n,
      );
    }
  });
});
