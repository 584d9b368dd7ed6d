import { ContractFactory, ZeroAddress } from "ethers";
import { describe, expect, it } from "vitest";
import { type RegistryContract, registryAt, withRunner } from "../src/contracts.ts";
import { projectRegistryAbi, projectRegistryBytecode } from "../src/generated/project-registry.ts";
import { waitForReceipt } from "../src/provider.ts";
import { ADMIN_ROLE, roleOf, UserStatus } from "../src/roles.ts";
import { mine } from "../src/testing.ts";
import {
  addr,
  type Chain,
  eventIn,
  eventsIn,
  expectRevert,
  namesIn,
  projectHash,
  roles,
  send,
  signer,
  useChain,
} from "./helpers.ts";

const chain = useChain();

const as = (c: Chain, index: number): RegistryContract => withRunner(c.registry, signer(c, index));

/** A separate registry with its own threshold and `voters` whitelisted (anvil account numbers). */
async function registryWith(
  c: Chain,
  threshold: number,
  voters: readonly number[],
): Promise<RegistryContract> {
  const admin = signer(c, roles.admin);
  const contract = await new ContractFactory(projectRegistryAbi, projectRegistryBytecode, admin).deploy(
    threshold,
  );
  await waitForReceipt(c.provider, contract.deploymentTransaction()!.hash);
  const registry = registryAt(await contract.getAddress(), admin);
  for (const v of voters) await send(registry.editUserStatus(addr(c, v), UserStatus.Whitelisted));
  return registry;
}

describe("roles and admins", () => {
  it("gives the deployer the default admin and admin roles, and nobody else", async () => {
    const c = chain();
    expect(await c.registry.ADMIN_ROLE()).toBe(ADMIN_ROLE);
    expect(await c.registry.hasRole(ADMIN_ROLE, addr(c, roles.admin))).toBe(true);
    expect(await c.registry.hasRole(await c.registry.DEFAULT_ADMIN_ROLE(), addr(c, roles.admin))).toBe(true);
    expect(await c.registry.hasRole(ADMIN_ROLE, addr(c, roles.proposer))).toBe(false);
    expect(await c.registry.statusList(addr(c, roles.proposer))).toBe(0n);
    expect(await c.registry.threshold()).toBe(50n);
  });

  it("emits AdminChange on every grant, revoke and renounce of the admin role, and only then", async () => {
    const c = chain();
    const target = addr(c, roles.proposer);
    const granted = await send(c.registry.grantRole(ADMIN_ROLE, target));
    expect(namesIn(granted)).toEqual(["RoleGranted", "AdminChange"]);
    expect([...eventIn(granted, "AdminChange")]).toEqual([ZeroAddress, target]);
    // Granting again changes nothing and says nothing.
    expect(namesIn(await send(c.registry.grantRole(ADMIN_ROLE, target)))).toEqual([]);

    const revoked = await send(c.registry.revokeRole(ADMIN_ROLE, target));
    expect([...eventIn(revoked, "AdminChange")]).toEqual([target, ZeroAddress]);

    await send(c.registry.grantRole(ADMIN_ROLE, target));
    const renounced = await send(as(c, roles.proposer).renounceRole(ADMIN_ROLE, target));
    expect([...eventIn(renounced, "AdminChange")]).toEqual([target, ZeroAddress]);
    expect(await c.registry.hasRole(ADMIN_ROLE, target)).toBe(false);

    // Other roles do not produce AdminChange.
    const other = await send(c.registry.grantRole(`0x${"11".repeat(32)}`, target));
    expect(namesIn(other)).toEqual(["RoleGranted"]);
  });

  it("lets only the default admin grant the admin role", async () => {
    const c = chain();
    const defaultAdminRole = await c.registry.DEFAULT_ADMIN_ROLE();
    await expectRevert(
      as(c, roles.admin2).grantRole(ADMIN_ROLE, addr(c, roles.proposer)),
      "AccessControlUnauthorizedAccount",
      [addr(c, roles.admin2), defaultAdminRole],
    );
  });

  it("refuses a threshold of 100% or more", async () => {
    const c = chain();
    const factory = new ContractFactory(projectRegistryAbi, projectRegistryBytecode, signer(c, roles.admin));
    await expectRevert(factory.deploy(100), "InvalidThreshold", [100n]);
  });
});

describe("user statuses", () => {
  it("emits WhitelistInsert, WhitelistRemove and UserStatusChanged and keeps whitelistedCount to whitelisted users only", async () => {
    const c = chain();
    const user = addr(c, roles.proposer);
    expect(await c.registry.whitelistedCount()).toBe(3n); // the three voters of the fixture

    const toWhitelist = await send(c.registry.editUserStatus(user, UserStatus.Whitelisted));
    expect(namesIn(toWhitelist)).toEqual(["WhitelistInsert", "UserStatusChanged"]);
    expect(eventIn(toWhitelist, "WhitelistInsert").user).toBe(user);
    expect([...eventIn(toWhitelist, "UserStatusChanged")]).toEqual([user, 0n, 1n]);
    expect(await c.registry.whitelistedCount()).toBe(4n);

    // Whitelisted -> Viewer: leaves the whitelist; a viewer is not a voter (the first implementation counted it).
    const toViewer = await send(c.registry.editUserStatus(user, UserStatus.Viewer));
    expect(namesIn(toViewer)).toEqual(["WhitelistRemove", "UserStatusChanged"]);
    expect(eventIn(toViewer, "WhitelistRemove").user).toBe(user);
    expect([...eventIn(toViewer, "UserStatusChanged")]).toEqual([user, 1n, 3n]);
    expect(await c.registry.whitelistedCount()).toBe(3n);

    const toBlacklist = await send(c.registry.editUserStatus(user, UserStatus.Blacklisted));
    expect(namesIn(toBlacklist)).toEqual(["UserStatusChanged"]);
    expect([...eventIn(toBlacklist, "UserStatusChanged")]).toEqual([user, 3n, 2n]);
    expect(await c.registry.whitelistedCount()).toBe(3n);

    const toDefault = await send(c.registry.editUserStatus(user, UserStatus.Default));
    expect([...eventIn(toDefault, "UserStatusChanged")]).toEqual([user, 2n, 0n]);
    expect(await c.registry.statusList(user)).toBe(0n);
  });

  it("refuses an unchanged status, the zero address and non-admins", async () => {
    const c = chain();
    const voter = addr(c, roles.voters[0]);
    await expectRevert(c.registry.editUserStatus(voter, UserStatus.Whitelisted), "StatusUnchanged", [
      voter,
      1n,
    ]);
    await expectRevert(c.registry.editUserStatus(ZeroAddress, UserStatus.Viewer), "ZeroAddress");
    await expectRevert(
      as(c, roles.voters[0]).editUserStatus(addr(c, roles.proposer), UserStatus.Viewer),
      "AccessControlUnauthorizedAccount",
      [voter, ADMIN_ROLE],
    );
  });

  it("derives the chain role of every kind of account", async () => {
    const c = chain();
    const roleAt = async (index: number) =>
      roleOf(
        await c.registry.statusList(addr(c, index)),
        await c.registry.hasRole(ADMIN_ROLE, addr(c, index)),
      );
    expect(await roleAt(roles.admin)).toBe("Admin");
    expect(await roleAt(roles.admin2)).toBe("Admin");
    expect(await roleAt(roles.voters[0])).toBe("Whitelist");
    expect(await roleAt(roles.viewer)).toBe("Viewer");
    expect(await roleAt(roles.blacklisted)).toBe("Blacklist");
    expect(await roleAt(roles.proposer)).toBe("Base");
    // An admin keeps "Admin" whatever its status.
    await send(c.registry.editUserStatus(addr(c, roles.admin2), UserStatus.Blacklisted));
    expect(await roleAt(roles.admin2)).toBe("Admin");
  });
});

describe("registerProject", () => {
  it("records the proposer and emits Register", async () => {
    const c = chain();
    const hash = projectHash("register");
    const receipt = await send(as(c, roles.proposer).registerProject(hash));
    expect([...eventIn(receipt, "Register")]).toEqual([addr(c, roles.proposer), hash]);
    const election = await c.registry.projectsRegistered(hash);
    expect([...election]).toEqual([0n, 0n, addr(c, roles.proposer), false, false]);
  });

  it("refuses duplicates, the zero hash and blacklisted callers; viewers and admins may register", async () => {
    const c = chain();
    const hash = projectHash("dup");
    await send(as(c, roles.proposer).registerProject(hash));
    await expectRevert(as(c, roles.bidders[0]).registerProject(hash), "ProjectAlreadyRegistered", [hash]);
    await expectRevert(as(c, roles.proposer).registerProject(`0x${"00".repeat(32)}`), "ZeroProjectHash");
    await expectRevert(as(c, roles.blacklisted).registerProject(projectHash("b")), "Blacklisted", [
      addr(c, roles.blacklisted),
    ]);
    await send(as(c, roles.viewer).registerProject(projectHash("viewer")));
    await send(as(c, roles.admin).registerProject(projectHash("admin")));
  });
});

describe("voting", () => {
  it("counts one vote per whitelisted voter and rejects everyone else", async () => {
    const c = chain();
    const hash = projectHash("vote");
    await expectRevert(as(c, roles.voters[0]).voteProposal(hash, true), "ProjectNotFound", [hash]);
    await send(as(c, roles.proposer).registerProject(hash));
    await expectRevert(as(c, roles.viewer).voteProposal(hash, true), "NotWhitelisted", [
      addr(c, roles.viewer),
    ]);
    await expectRevert(as(c, roles.proposer).voteProposal(hash, true), "NotWhitelisted", [
      addr(c, roles.proposer),
    ]);

    const receipt = await send(as(c, roles.voters[0]).voteProposal(hash, true));
    expect([...eventIn(receipt, "Vote")]).toEqual([hash, addr(c, roles.voters[0]), true, 1n]);
    expect(namesIn(receipt)).toEqual(["Vote"]); // 1 approval is not > quorum 1 (3 voters * 50 / 100 = 1)
    await expectRevert(as(c, roles.voters[0]).voteProposal(hash, false), "AlreadyVoted", [
      addr(c, roles.voters[0]),
      hash,
    ]);
    const voter = await c.registry.getVoter(hash, addr(c, roles.voters[0]));
    expect([voter.weight, voter.voted, voter.decision]).toEqual([0n, true, true]);
  });

  it.each([
    // quorum = floor(3 voters * threshold / 100); a side must exceed it.
    { threshold: 70, votesNeeded: 3 }, // 3 * 70 / 100 = 2.1 -> 2, so 3 votes
    { threshold: 50, votesNeeded: 2 }, // 3 * 50 / 100 = 1.5 -> 1, so 2 votes
    { threshold: 30, votesNeeded: 1 }, // 3 * 30 / 100 = 0.9 -> 0, so 1 vote
  ])(
    "finalizes at $threshold% after $votesNeeded same-side votes of 3",
    async ({ threshold, votesNeeded }) => {
      const c = chain();
      const voters = roles.voters;
      for (const decision of [true, false]) {
        const registry = await registryWith(c, threshold, voters);
        const hash = projectHash(`t${threshold}${decision}`);
        await send(withRunner(registry, signer(c, roles.proposer)).registerProject(hash));
        for (let i = 0; i < votesNeeded; i++) {
          const receipt = await send(
            withRunner(registry, signer(c, voters[i]!)).voteProposal(hash, decision),
          );
          const evaluations = eventsIn(receipt).filter((e) => e.name === "ProjectEvaluation");
          if (i < votesNeeded - 1) expect(evaluations).toEqual([]);
          else expect(evaluations.map((e) => [...e.args])).toEqual([[hash, decision]]);
        }
        const election = await registry.projectsRegistered(hash);
        expect([election.finalized, election.decision]).toEqual([true, decision]);
        expect(await registry.isApprovedProposer(addr(c, roles.proposer), hash)).toBe(decision);
      }
    },
  );

  it("emits ProjectEvaluation exactly once: later votes and delegations are refused", async () => {
    const c = chain();
    const hash = projectHash("once");
    await send(as(c, roles.proposer).registerProject(hash));
    await send(as(c, roles.voters[0]).voteProposal(hash, false));
    const final = await send(as(c, roles.voters[1]).voteProposal(hash, false));
    expect([...eventIn(final, "ProjectEvaluation")]).toEqual([hash, false]);
    await expectRevert(as(c, roles.voters[2]).voteProposal(hash, true), "ProjectAlreadyFinalized", [hash]);
    // The first implementation let a delegation re-evaluate a finalized project.
    await expectRevert(
      as(c, roles.voters[2]).delegate(addr(c, roles.voters[0]), hash),
      "ProjectAlreadyFinalized",
      [hash],
    );
    expect(await c.registry.isApprovedProposer(addr(c, roles.proposer), hash)).toBe(false);
  });

  it("rejects on a tie once one side passes the quorum", async () => {
    const c = chain();
    // Six voters at 40%: quorum 6 * 40 / 100 = 2.4 -> 2.
    const six = [...roles.voters, ...roles.extraVoters];
    const registry = await registryWith(c, 40, six);
    const [a, b, cc, d, e, f] = six as unknown as [number, number, number, number, number, number];
    const hash = projectHash("tie");
    const on = (i: number) => withRunner(registry, signer(c, i));
    await send(on(roles.proposer).registerProject(hash));
    await send(on(a).voteProposal(hash, true));
    await send(on(b).voteProposal(hash, true));
    await send(on(cc).voteProposal(hash, false));
    await send(on(d).voteProposal(hash, false)); // 2 : 2, neither > 2
    // Two voters who already voted leave the whitelist: their votes stand, quorum drops to 4 * 40 / 100 = 1.
    await send(registry.editUserStatus(addr(c, cc), UserStatus.Default));
    await send(registry.editUserStatus(addr(c, d), UserStatus.Default));
    expect(await registry.quorum()).toBe(1n);
    // A delegation between two non-voters adds no vote but re-checks: 2 : 2, both > 1, a tie rejects.
    const receipt = await send(on(e).delegate(addr(c, f), hash));
    expect([...eventIn(receipt, "VoteDelegate")]).toEqual([addr(c, e), addr(c, f), hash, 1n]);
    expect([...eventIn(receipt, "ProjectEvaluation")]).toEqual([hash, false]);
  });
});

describe("delegation", () => {
  it("adds delegated weight along a chain to the final delegate's vote", async () => {
    const c = chain();
    const [a, b, d] = roles.voters;
    const hash = projectHash("chain");
    await send(as(c, roles.proposer).registerProject(hash));
    // a -> b, then d -> a follows the chain to b: b votes with 1 + 1 + 1 = 3.
    const first = await send(as(c, a).delegate(addr(c, b), hash));
    expect([...eventIn(first, "VoteDelegate")]).toEqual([addr(c, a), addr(c, b), hash, 1n]);
    const second = await send(as(c, d).delegate(addr(c, a), hash));
    expect([...eventIn(second, "VoteDelegate")]).toEqual([addr(c, d), addr(c, b), hash, 1n]);
    expect((await c.registry.getVoter(hash, addr(c, b))).weight).toBe(3n);
    const vote = await send(as(c, b).voteProposal(hash, true));
    expect([...eventIn(vote, "Vote")]).toEqual([hash, addr(c, b), true, 3n]);
    expect([...eventIn(vote, "ProjectEvaluation")]).toEqual([hash, true]); // 3 > quorum 1
    expect((await c.registry.projectsRegistered(hash)).approved).toBe(3n);
  });

  it("adds weight straight to the side of a delegate who already voted, and may finalize", async () => {
    const c = chain();
    const [a, b] = roles.voters;
    const hash = projectHash("late");
    await send(as(c, roles.proposer).registerProject(hash));
    await send(as(c, b).voteProposal(hash, false)); // 0 : 1
    const receipt = await send(as(c, a).delegate(addr(c, b), hash)); // 0 : 2 > quorum 1
    expect(namesIn(receipt)).toEqual(["VoteDelegate", "ProjectEvaluation"]);
    expect([...eventIn(receipt, "ProjectEvaluation")]).toEqual([hash, false]);
    expect((await c.registry.projectsRegistered(hash)).rejected).toBe(2n);
  });

  it("refuses self-delegation, loops, delegating after voting and delegates who cannot vote", async () => {
    const c = chain();
    const [a, b, d] = roles.voters;
    const hash = projectHash("bad-delegation");
    await send(as(c, roles.proposer).registerProject(hash));
    await expectRevert(as(c, a).delegate(addr(c, a), hash), "SelfDelegation");
    await send(as(c, a).delegate(addr(c, b), hash));
    await send(as(c, b).delegate(addr(c, d), hash));
    await expectRevert(as(c, d).delegate(addr(c, a), hash), "DelegationLoop", [addr(c, d)]);
    await expectRevert(as(c, a).delegate(addr(c, d), hash), "AlreadyVoted", [addr(c, a), hash]);
    const other = projectHash("bad-delegation-2");
    await send(as(c, roles.proposer).registerProject(other));
    await expectRevert(as(c, a).delegate(addr(c, roles.viewer), other), "DelegateNotWhitelisted", [
      addr(c, roles.viewer),
    ]);
    await expectRevert(as(c, roles.viewer).delegate(addr(c, a), other), "NotWhitelisted", [
      addr(c, roles.viewer),
    ]);
    await expectRevert(as(c, a).delegate(addr(c, b), projectHash("nope")), "ProjectNotFound", [
      projectHash("nope"),
    ]);
  });
});

describe("removeProject", () => {
  it("needs two distinct admins and lets the hash be registered and voted on afresh", async () => {
    const c = chain();
    const hash = projectHash("remove");
    await send(as(c, roles.proposer).registerProject(hash));
    await send(as(c, roles.voters[0]).voteProposal(hash, true));

    await expectRevert(as(c, roles.proposer).removeProject(hash), "NotAdmin", [addr(c, roles.proposer)]);
    const first = await send(c.registry.removeProject(hash));
    expect(namesIn(first)).toEqual(["ActionApproved"]);
    expect(eventIn(first, "ActionApproved").approvals).toBe(1n);
    expect((await c.registry.projectsRegistered(hash)).proposer).toBe(addr(c, roles.proposer));
    const actionId = eventIn(first, "ActionApproved").actionId as string;
    expect((await c.registry.pendingApproval(actionId)).firstApprover).toBe(addr(c, roles.admin));
    await expectRevert(c.registry.removeProject(hash), "AlreadyApproved", [actionId, addr(c, roles.admin)]);

    const second = await send(as(c, roles.admin2).removeProject(hash));
    expect(namesIn(second)).toEqual(["ActionApproved", "ProjectRemoved"]);
    expect(eventIn(second, "ProjectRemoved").projectHash).toBe(hash);
    expect((await c.registry.projectsRegistered(hash)).proposer).toBe(ZeroAddress);
    expect(await c.registry.registrationRound(hash)).toBe(1n);
    await expectRevert(c.registry.removeProject(hash), "ProjectNotFound", [hash]);

    // Re-registration starts a clean election: the earlier voter may vote again.
    await send(as(c, roles.bidders[0]).registerProject(hash));
    await send(as(c, roles.voters[0]).voteProposal(hash, false));
    expect((await c.registry.projectsRegistered(hash)).rejected).toBe(1n);
  });

  it("forgets an approval after 100 blocks or when its admin loses the role", async () => {
    const c = chain();
    const hash = projectHash("window");
    await send(as(c, roles.proposer).registerProject(hash));
    await send(c.registry.removeProject(hash));
    await mine(c.provider, 100);
    const late = await send(as(c, roles.admin2).removeProject(hash));
    expect(eventIn(late, "ActionApproved").approvals).toBe(1n); // a fresh round, not the second approval
    expect((await c.registry.projectsRegistered(hash)).proposer).toBe(addr(c, roles.proposer));

    await send(c.registry.revokeRole(ADMIN_ROLE, addr(c, roles.admin2)));
    const afterRevoke = await send(c.registry.removeProject(hash));
    expect(eventIn(afterRevoke, "ActionApproved").approvals).toBe(1n);
  });
});
