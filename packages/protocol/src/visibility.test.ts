import { describe, expect, it } from "vitest";
import type { Caller, UserRole } from "./common.ts";
import { inScope, scopeOf, sharedListOf, visibleTo } from "./visibility.ts";

const caller = (role: UserRole): Caller => ({
  userId: 7,
  username: "u",
  address: "0x0000000000000000000000000000000000000001",
  role,
});
const states = [
  { viewerAccepted: false, status: "Pending" },
  { viewerAccepted: true, status: "Pending" },
  { viewerAccepted: true, status: "Approved" },
  { viewerAccepted: false, status: "Approved" },
];

describe("visibility (rules.md §4.2)", () => {
  it.each([
    ["Admin", [true, true, true, true]],
    ["Viewer", [true, true, true, true]],
    ["Whitelist", [false, true, true, false]],
    ["Base", [false, false, true, false]],
    ["Blacklist", [false, false, true, false]],
  ] as const)("%s", (role, expected) => {
    expect(states.map((s) => visibleTo(caller(role), s, false))).toEqual(expected);
    // A member (an invitation is enough) sees the project whatever its state.
    expect(states.map((s) => visibleTo(caller(role), s, true))).toEqual([true, true, true, true]);
  });

  it("anonymous sees viewer-accepted Approved projects only", () => {
    expect(states.map((s) => visibleTo(null, s, false))).toEqual([false, false, true, false]);
  });

  it("a scope, as lists and the cache read it: the same rule", () => {
    for (const who of [null, caller("Base"), caller("Whitelist"), caller("Admin")]) {
      const scope = scopeOf(who);
      for (const s of states) expect(inScope(scope, s, false)).toBe(visibleTo(who, s, false));
    }
  });

  it("lists shared by every caller of a scope are named; a member's are not", () => {
    expect(sharedListOf(scopeOf(null))).toBe('open:{"viewerAccepted":true,"status":"Approved"}');
    expect(sharedListOf(scopeOf(caller("Admin")))).toBe(sharedListOf(scopeOf(caller("Viewer"))));
    expect(sharedListOf(scopeOf(caller("Base")))).toBeNull();
  });
});
