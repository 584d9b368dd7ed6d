import type { Caller, UserRole } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import { removalRefusal } from "./membership.service.ts";
import type { Permission } from "./project.entity.ts";
import { parseMarkdown, parseRating, parseText, scopeOf, sees } from "./project.validation.ts";

const caller = (role: UserRole): Caller => ({
  userId: 7,
  username: "u",
  address: "0x0000000000000000000000000000000000000001",
  role,
});

describe("visibility", () => {
  const states = [
    { viewerAccepted: false, status: "Pending" },
    { viewerAccepted: true, status: "Pending" },
    { viewerAccepted: true, status: "Approved" },
    { viewerAccepted: false, status: "Approved" },
  ];
  it.each([
    ["Admin", [true, true, true, true]],
    ["Viewer", [true, true, true, true]],
    ["Whitelist", [false, true, true, false]],
    ["Base", [false, false, true, false]],
    ["Blacklist", [false, false, true, false]],
  ] as const)("%s", (role, expected) => {
    expect(states.map((s) => sees(scopeOf(caller(role)), s, false))).toEqual(expected);
    expect(states.map((s) => sees(scopeOf(caller(role)), s, true))).toEqual([true, true, true, true]);
  });
  it("anonymous sees viewer-accepted Approved projects only", () => {
    expect(states.map((s) => sees(scopeOf(null), s, false))).toEqual([false, false, true, false]);
  });
});

describe("ratings", () => {
  it.each([0, 2.5, 5])("%s is a rating", (v) => expect(parseRating(v)).toBe(v));
  it.each([Number.NaN, -1, 5.0001, Number.POSITIVE_INFINITY, -0.0001])("%s is not", (v) =>
    expect(() => parseRating(v)).toThrow(/rating/),
  );
});

describe("removalRefusal", () => {
  const row = (role: string, isAccepted = true) => ({ role, isAccepted }) as Permission;
  it.each([
    ["Owner leaves", row("Owner"), row("Owner"), true, false, "MEMBERSHIP_OWNER"],
    ["Co-Owner removes the Owner", row("Co-Owner"), row("Owner"), false, false, "MEMBERSHIP_OWNER"],
    ["Editor leaves", row("Editor"), row("Editor"), true, true, null],
    [
      "Co-Owner leaves after the auction",
      row("Co-Owner"),
      row("Co-Owner"),
      true,
      true,
      "PROJECT_AUCTION_EXISTS",
    ],
    ["Co-Owner leaves before the auction", row("Co-Owner"), row("Co-Owner"), true, false, null],
    ["Co-Owner removes an Editor", row("Co-Owner"), row("Editor"), false, true, null],
    ["Co-Owner removes a pending Co-Owner", row("Co-Owner"), row("Co-Owner", false), false, false, null],
    ["Co-Owner removes a Co-Owner", row("Co-Owner"), row("Co-Owner"), false, false, "PROJECT_NOT_MEMBER"],
    ["Owner removes a Co-Owner", row("Owner"), row("Co-Owner"), false, true, null],
    ["Editor removes an Editor", row("Editor"), row("Editor"), false, false, "PROJECT_NOT_MEMBER"],
    [
      "pending Co-Owner removes an Editor",
      row("Co-Owner", false),
      row("Editor"),
      false,
      false,
      "PROJECT_NOT_MEMBER",
    ],
    ["a stranger removes an Editor", null, row("Editor"), false, false, "PROJECT_NOT_MEMBER"],
  ] as const)("%s", (_label, actor, target, self, auction, code) => {
    const refusal = removalRefusal(actor, target, self, auction);
    expect(refusal === null ? null : refusal.code).toBe(code);
  });
});

describe("free text", () => {
  it("is kept as given, but the NUL character (PostgreSQL's text cannot hold it) is a 400", () => {
    expect(parseMarkdown("# Title\n\ttabs, \u{1F600} and \\0 as text")).toBe(
      "# Title\n\ttabs, \u{1F600} and \\0 as text",
    );
    for (const [path, parse] of [
      ["/markDown", parseMarkdown],
      ["/projectDescription", (text: string) => parseText("/projectDescription", text)],
    ] as const) {
      expect(() => parse("a\u0000b")).toThrow(expect.objectContaining({ kind: "validation" }));
      expect(() => parse("a\u0000b")).toThrow(new RegExp(`${path.slice(1)}: must not contain the NUL`));
    }
  });
});
