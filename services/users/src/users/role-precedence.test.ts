import { describe, expect, it } from "vitest";
import { decideChainRole, type RoleSources } from "./role-precedence.ts";

const base: RoleSources = {
  role: "Base",
  chainRole: null,
  chainPosition: null,
  adminRoleAt: null,
  adminRoleBlock: null,
};
const t = (s: number) => new Date(1_800_000_000_000 + s * 1000);

describe("decideChainRole (rules.md §7.1: the newer source wins)", () => {
  it("a read equal to the chain's last known state changes nothing, whatever the admin set", () => {
    const user = { ...base, role: "Blacklist" as const, chainRole: "Base" as const, adminRoleAt: t(10) };
    expect(decideChainRole(user, { kind: "read", role: "Base" })).toEqual({ record: false, role: null });
  });

  it("a read that differs from the last known state is a newer chain change: it wins", () => {
    const user = { ...base, role: "Blacklist" as const, chainRole: "Base" as const, adminRoleAt: t(10) };
    expect(decideChainRole(user, { kind: "read", role: "Whitelist" })).toEqual({
      record: true,
      role: "Whitelist",
    });
  });

  it("a first read with no admin change applies the chain; after an admin change it is only recorded", () => {
    expect(decideChainRole(base, { kind: "read", role: "Viewer" })).toEqual({ record: true, role: "Viewer" });
    expect(decideChainRole(base, { kind: "read", role: "Base" })).toEqual({ record: true, role: null });
    const demoted = { ...base, role: "Blacklist" as const, adminRoleAt: t(10) };
    expect(decideChainRole(demoted, { kind: "read", role: "Base" })).toEqual({ record: true, role: null });
  });

  it("facts: dated against the admin's change, and never older than the last applied", () => {
    const user = {
      ...base,
      role: "Viewer" as const,
      adminRoleAt: t(10),
      chainPosition: { block: 5, logIndex: 2 },
    };
    const fact = (block: number, logIndex: number, at: Date) =>
      ({ kind: "fact", role: "Whitelist", position: { block, logIndex }, at }) as const;
    expect(decideChainRole(user, fact(5, 2, t(20)))).toEqual({ record: false, role: null });
    expect(decideChainRole(user, fact(4, 9, t(20)))).toEqual({ record: false, role: null });
    expect(decideChainRole(user, fact(5, 3, t(9)))).toEqual({ record: true, role: null });
    expect(decideChainRole(user, fact(6, 0, t(11)))).toEqual({ record: true, role: "Whitelist" });
  });

  it("the chain dates by the second: a block of the admin's second wins, an earlier second does not", () => {
    const demoted = { ...base, role: "Blacklist" as const, chainRole: "Base" as const, adminRoleAt: t(10.4) };
    const fact = (at: Date) =>
      ({ kind: "fact", role: "Whitelist", position: { block: 7, logIndex: 0 }, at }) as const;
    // Block timestamp 10 s: mined in the admin's second, possibly after the change (the fact arrives after it).
    expect(decideChainRole(demoted, fact(t(10)))).toEqual({ record: true, role: "Whitelist" });
    expect(decideChainRole(demoted, fact(t(9)))).toEqual({ record: true, role: null });
  });

  /** A user an admin demoted to Blacklist at second `at`, when the node's head was block `head`. */
  const demotedKnowing = (at: number, head: number): RoleSources => ({
    ...base,
    role: "Blacklist",
    chainRole: "Base",
    adminRoleAt: t(at),
    adminRoleBlock: head,
  });
  /** The indexer's fact that the chain made the user a Viewer in `block`, stamped second `stamp`. */
  const viewerFact = (block: number, stamp: number) =>
    ({ kind: "fact", role: "Viewer", position: { block, logIndex: 0 }, at: t(stamp) }) as const;

  it("a block up to the head the index knew at the admin's change is older, even within the same second", () => {
    // The chain's change was mined in block 7 at second 10, then an admin demoted at 10.9 s knowing head 7.
    const demoted = demotedKnowing(10.9, 7);
    expect(decideChainRole(demoted, viewerFact(7, 10))).toEqual({ record: true, role: null });
    expect(decideChainRole(demoted, viewerFact(6, 10))).toEqual({ record: true, role: null });
    // A later block of that second may have been mined after the change: the chain wins the tie.
    expect(decideChainRole(demoted, viewerFact(8, 10))).toEqual({ record: true, role: "Viewer" });
  });

  it("a block beyond that head was mined after the change, whatever its timestamp says", () => {
    // Seen on anvil: a block mined 50 ms after an admin's change at 27.75 s, stamped 26 s.
    const demoted = demotedKnowing(27.75, 29);
    expect(decideChainRole(demoted, viewerFact(30, 26))).toEqual({ record: true, role: "Viewer" });
    expect(decideChainRole(demoted, viewerFact(29, 26))).toEqual({ record: true, role: null });
  });
});
