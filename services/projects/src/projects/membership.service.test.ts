import { describe, expect, it } from "vitest";
import { removalRefusal } from "./membership.service.ts";
import type { Permission } from "./project.entity.ts";

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
