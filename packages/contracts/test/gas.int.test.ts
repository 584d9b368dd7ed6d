import type { TransactionReceipt } from "ethers";
import { expect, it } from "vitest";
import { AUCTION_TYPES, type AuctionType } from "../src/auction-types.ts";
import { withRunner } from "../src/contracts.ts";
import { UserStatus } from "../src/roles.ts";
import {
  approvedProject,
  bid,
  createAuction,
  E18,
  mineAt,
  projectHash,
  roles,
  send,
  signer,
  start,
  useChain,
} from "./helpers.ts";

const chain = useChain();
const [b1, b2, b3] = roles.bidders;

const params: Record<AuctionType, { supply?: bigint; rate?: bigint; finalRate?: bigint; limit?: bigint }> = {
  UncappedAuction: { rate: 2n * E18 },
  PseudoCappedAuction: { supply: 100n * E18 },
  OBFCFSAuction: { supply: 100n * E18, rate: 2n * E18 },
  FCFSAuction: { supply: 100n * E18, rate: 2n * E18 },
  DutchAuction: { supply: 100n * E18, rate: 10n * E18, finalRate: 2n * E18 },
  OBDutchAuction: { supply: 100n * E18, finalRate: E18 },
  StrictDutchAuction: { supply: 100n * E18, rate: 10n * E18, finalRate: 2n * E18 },
};

it("prints the gas used by the main calls", async () => {
  const c = chain();
  const rows: { call: string; gas: number }[] = [];
  const record = (call: string, receipt: TransactionReceipt) =>
    rows.push({ call, gas: Number(receipt.gasUsed) });
  const registry = (i: number) => withRunner(c.registry, signer(c, i));
  const [v1, v2, v3] = roles.voters;

  record(
    "ProjectRegistry.editUserStatus (to Whitelisted)",
    await send(c.registry.editUserStatus(signer(c, roles.proposer).address, UserStatus.Whitelisted)),
  );
  await send(c.registry.editUserStatus(signer(c, roles.proposer).address, UserStatus.Default));
  const hash = projectHash("gas");
  record("ProjectRegistry.registerProject", await send(registry(roles.proposer).registerProject(hash)));
  record("ProjectRegistry.delegate", await send(registry(v1).delegate(signer(c, v2).address, hash)));
  record("ProjectRegistry.voteProposal (finalizes)", await send(registry(v2).voteProposal(hash, true)));
  const other = projectHash("gas-2");
  await send(registry(roles.proposer).registerProject(other));
  record("ProjectRegistry.voteProposal", await send(registry(v3).voteProposal(other, true)));
  record("ProjectRegistry.removeProject (1st admin)", await send(c.registry.removeProject(other)));
  record(
    "ProjectRegistry.removeProject (2nd admin)",
    await send(registry(roles.admin2).removeProject(other)),
  );

  const tokenHash = await approvedProject(c, "gas-token");
  record(
    "AuctionFactory.createToken",
    await send(
      withRunner(c.factory, signer(c, roles.proposer)).createToken(tokenHash, "Gas", "GAS", 1_000n * E18),
    ),
  );

  for (const type of AUCTION_TYPES) {
    const {
      hash: auctionHash,
      auction,
      createReceipt,
    } = await createAuction(c, type, params[type], `gas-${type}`);
    record(`AuctionFactory.createAuction (${type})`, createReceipt);
    const t0 = await start(c, auction, 1_000);
    const price = type === "OBDutchAuction" ? { price: 2n * E18 } : {};
    record(`${type}.bid (first)`, await bid(c, auction, b1, 20n * E18, { at: t0 + 100, ...price }));
    const second = type === "OBDutchAuction" ? { price: 3n * E18 } : {};
    record(`${type}.bid (second bidder)`, await bid(c, auction, b2, 20n * E18, { at: t0 + 200, ...second }));
    if (type === "OBDutchAuction") {
      // 240 tokens wanted above level 2 cover the supply: this order drops two price levels.
      record(
        `${type}.bid (drops levels)`,
        await bid(c, auction, b3, 960n * E18, { at: t0 + 300, price: 4n * E18 }),
      );
    }
    if (type === "FCFSAuction") {
      record("AuctionFactory.pauseAuction", await send(c.factory.pauseAuction(auctionHash, 100)));
    }
    await mineAt(c, t0 + 1_200);
    const claims = type === "OBFCFSAuction" || type === "PseudoCappedAuction" || type === "OBDutchAuction";
    if (claims) {
      record(
        `${type}.withDraw (ends the auction)`,
        await send(withRunner(auction, signer(c, b1)).withDraw()),
      );
      record(`${type}.withDraw`, await send(withRunner(auction, signer(c, b2)).withDraw()));
    } else {
      record(`${type}.manualFinish`, await send(withRunner(auction, signer(c, b1)).manualFinish()));
    }
  }
  const forced = await createAuction(c, "FCFSAuction", params.FCFSAuction, "gas-forced");
  record("Auction.startAuction", await send(forced.auction.startAuction(1_000)));
  record("AuctionFactory.forceFinishAuction (FCFS)", await send(c.factory.forceFinishAuction(forced.hash)));

  const width = Math.max(...rows.map((r) => r.call.length));
  console.log(
    [
      "Gas used (solc 0.8.37, optimizer 200 runs, cancun):",
      ...rows.map((r) => `  ${r.call.padEnd(width)}  ${r.gas.toLocaleString("en-US").padStart(9)}`),
    ].join("\n"),
  );
  // Clones keep auction creation cheap; no main call should come near a block's worth of gas.
  for (const row of rows) expect(row.gas, row.call).toBeLessThan(1_000_000);
  for (const row of rows.filter((r) => r.call.startsWith("AuctionFactory.createAuction"))) {
    expect(row.gas, row.call).toBeLessThan(500_000);
  }
});
