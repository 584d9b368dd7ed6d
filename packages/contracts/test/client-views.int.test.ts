// The registry and factory views the first implementation's web client reads, called and decoded with its ABI:
// same arity, order and types, and zero values (never a revert or a missing entry) for keys that hold nothing.
import { type Result, ZeroAddress, ZeroHash } from "ethers";
import { describe, expect, it } from "vitest";
import { AuctionStatus } from "../src/auction-types.ts";
import { withRunner } from "../src/contracts.ts";
import { UserStatus } from "../src/roles.ts";
import { clientFactoryAt, clientRegistryAt } from "./client-abi.ts";
import {
  addr,
  approvedProject,
  type Chain,
  createAuction,
  E18,
  projectHash,
  roles,
  send,
  signer,
  start,
  useChain,
} from "./helpers.ts";

const chain = useChain();

const clientFactory = (c: Chain) => clientFactoryAt(c.deployment.factory, c.provider);
const clientRegistry = (c: Chain) => clientRegistryAt(c.deployment.registry, c.provider);

/** A `ProjectSurface` as plain values: [auction, tokenName, tokenSymbol, auctionType, projectHash]. */
const plain = (entries: Result) => [...entries].map((entry: Result) => [...entry]);
const zeroed = [ZeroAddress, "", "", "", ZeroHash];

/** A project with a token but no auction yet. */
async function tokenOnly(c: Chain, label: string): Promise<string> {
  const hash = await approvedProject(c, label);
  await send(withRunner(c.factory, signer(c, roles.proposer)).createToken(hash, `${label} token`, "TKN", 0n));
  return hash;
}

describe("getAllAuctionsByHashList", () => {
  it("answers one entry per hash, in the order given, zeroed where the hash has no auction", async () => {
    const c = chain();
    const off = await createAuction(c, "FCFSAuction", { supply: 100n, rate: E18 }, "off");
    const running = await createAuction(
      c,
      "DutchAuction",
      { supply: 100n, rate: 2n * E18, finalRate: E18 },
      "run",
    );
    await start(c, running.auction, 10_000);
    const token = await tokenOnly(c, "token-only");
    const registered = projectHash("registered-only");
    await send(withRunner(c.registry, signer(c, roles.proposer)).registerProject(registered));
    const unknown = projectHash("unknown");

    const offEntry = [off.address, "off token", "PRJ", "FCFSAuction", off.hash];
    const runEntry = [running.address, "run token", "PRJ", "DutchAuction", running.hash];
    const hashes = [unknown, running.hash, token, off.hash, running.hash, registered, unknown];
    expect(plain(await clientFactory(c).getAllAuctionsByHashList(hashes))).toEqual([
      zeroed,
      runEntry,
      zeroed,
      offEntry,
      runEntry,
      zeroed,
      zeroed,
    ]);
    expect(plain(await clientFactory(c).getAllAuctionsByHashList([off.hash, running.hash]))).toEqual([
      offEntry,
      runEntry,
    ]);
    expect(plain(await clientFactory(c).getAllAuctionsByHashList([]))).toEqual([]);
  });

  it("gives the project page an entry before the auction exists, and its token name after", async () => {
    const c = chain();
    const hash = await tokenOnly(c, "project-page");
    // The page's read: `(await factory.getAllAuctionsByHashList([fileHash]))[0].tokenName`.
    const read = async () => (await clientFactory(c).getAllAuctionsByHashList([hash]))[0].tokenName as string;
    expect(await read()).toBe("");
    expect(await clientFactory(c).getAllAuctionsByHashList([projectHash("never registered")])).toHaveLength(
      1,
    );
    await send(
      withRunner(c.factory, signer(c, roles.proposer)).createAuction(hash, "FCFSAuction", [10n, E18, 0n, 0n]),
    );
    expect(await read()).toBe("project-page token");
  });
});

describe("getProjectSurfaceByStatus", () => {
  it("keeps min(selectCount, hashes) entries, filled from the last slot back, zeroed in front", async () => {
    const c = chain();
    const off = await createAuction(c, "FCFSAuction", { supply: 100n, rate: E18 }, "off");
    const running = await createAuction(
      c,
      "DutchAuction",
      { supply: 100n, rate: 2n * E18, finalRate: E18 },
      "run",
    );
    const paused = await createAuction(c, "OBDutchAuction", { supply: 100n }, "paused");
    const ended = await createAuction(c, "UncappedAuction", { rate: E18 }, "ended");
    const token = await tokenOnly(c, "token-only");
    await start(c, running.auction, 10_000);
    await start(c, paused.auction, 10_000);
    await send(c.factory.pauseAuction(paused.hash, 5_000));
    await start(c, ended.auction, 10_000);
    await send(c.factory.forceFinishAuction(ended.hash));

    const hashes = [ended.hash, projectHash("unknown"), token, running.hash, paused.hash, off.hash];
    // A filled entry as [auctionType, projectHash]; a zeroed one as is.
    const surface = async (status: number, count: number, ignore: boolean) =>
      plain(await clientFactory(c).getProjectSurfaceByStatus(hashes, status, count, ignore)).map((s) =>
        s[3] === "" ? s : [s[3], s[4]],
      );
    const Z = zeroed;
    const [e, r, p, o] = [
      ["UncappedAuction", ended.hash],
      ["DutchAuction", running.hash],
      ["OBDutchAuction", paused.hash],
      ["FCFSAuction", off.hash],
    ];
    expect(await surface(AuctionStatus.Running, 10, false)).toEqual([Z, Z, Z, Z, Z, r]);
    expect(await surface(AuctionStatus.Paused, 10, false)).toEqual([Z, Z, Z, Z, Z, p]);
    expect(await surface(AuctionStatus.Ended, 3, false)).toEqual([Z, Z, e]);
    expect(await surface(AuctionStatus.Off, 10, false)).toEqual([Z, Z, Z, Z, Z, o]);
    // Matches are taken in input order; the first one lands in the last slot.
    expect(await surface(AuctionStatus.Off, 10, true)).toEqual([Z, Z, o, p, r, e]);
    expect(await surface(AuctionStatus.Off, 2, true)).toEqual([r, e]);
    expect(await surface(AuctionStatus.Off, 0, true)).toEqual([]);
    const first = (
      await clientFactory(c).getProjectSurfaceByStatus(hashes, AuctionStatus.Ended, 1, false)
    )[0];
    expect([...first]).toEqual([ended.address, "ended token", "PRJ", "UncappedAuction", ended.hash]);
    expect(await surface(AuctionStatus.Off, 2, false)).toEqual([Z, o]);
    expect(plain(await clientFactory(c).getProjectSurfaceByStatus([token], 0, 5, true))).toEqual([zeroed]);
    expect(plain(await clientFactory(c).getProjectSurfaceByStatus([], 0, 5, true))).toEqual([]);
  });
});

describe("projectTokens", () => {
  it("returns (proposer, token, auction, auctionType), zero for a hash without a token", async () => {
    const c = chain();
    const factory = clientFactory(c);
    expect([...(await factory.projectTokens(projectHash("unknown")))]).toEqual([
      ZeroAddress,
      ZeroAddress,
      ZeroAddress,
      "",
    ]);
    const hash = await tokenOnly(c, "tokens");
    const withToken = await factory.projectTokens(hash);
    expect([withToken.proposer, withToken.auction, withToken.auctionType]).toEqual([
      addr(c, roles.proposer),
      ZeroAddress,
      "",
    ]);
    expect(withToken.token).not.toBe(ZeroAddress);
    await send(
      withRunner(c.factory, signer(c, roles.proposer)).createAuction(hash, "FCFSAuction", [10n, E18, 0n, 0n]),
    );
    const full = await factory.projectTokens(hash);
    expect([full.proposer, full.token, full.auctionType]).toEqual([
      addr(c, roles.proposer),
      withToken.token,
      "FCFSAuction",
    ]);
    expect(full.auction).not.toBe(ZeroAddress);
  });
});

describe("registry views", () => {
  it("projectsRegistered: the five scalars by name, all zero for an unknown hash", async () => {
    const c = chain();
    const registry = clientRegistry(c);
    expect([...(await registry.projectsRegistered(projectHash("unknown")))]).toEqual([
      0n,
      0n,
      ZeroAddress,
      false,
      false,
    ]);
    const hash = projectHash("votes");
    await send(withRunner(c.registry, signer(c, roles.proposer)).registerProject(hash));
    await send(withRunner(c.registry, signer(c, roles.voters[0])).voteProposal(hash, false));
    const open = await registry.projectsRegistered(hash);
    expect([open.approved, open.rejected, open.proposer, open.finalized, open.decision]).toEqual([
      0n,
      1n,
      addr(c, roles.proposer),
      false,
      false,
    ]);
    await send(withRunner(c.registry, signer(c, roles.voters[1])).voteProposal(hash, true));
    await send(withRunner(c.registry, signer(c, roles.voters[2])).voteProposal(hash, true));
    const done = await registry.projectsRegistered(hash);
    expect([done.approved, done.rejected, done.finalized, done.decision]).toEqual([2n, 1n, true, true]);
  });

  it("statusList, threshold and whitelistedCount: the values the vote bar is computed from", async () => {
    const c = chain();
    const registry = clientRegistry(c);
    expect(await registry.statusList(addr(c, roles.proposer))).toBe(BigInt(UserStatus.Default));
    expect(await registry.statusList(addr(c, roles.voters[0]))).toBe(BigInt(UserStatus.Whitelisted));
    expect(await registry.statusList(addr(c, roles.blacklisted))).toBe(BigInt(UserStatus.Blacklisted));
    expect(await registry.statusList(addr(c, roles.viewer))).toBe(BigInt(UserStatus.Viewer));
    expect(await registry.statusList(ZeroAddress)).toBe(0n);
    expect(await registry.threshold()).toBe(50n);
    expect(await registry.whitelistedCount()).toBe(3n);
  });
});
