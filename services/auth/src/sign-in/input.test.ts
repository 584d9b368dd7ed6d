import { isAppError, isEmailAddress } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import { validateRegistration } from "./input.ts";

const valid = { name: " Ada ", surname: "Lovelace", username: "ada.l_1", mailAddress: "ada@example.org" };

function issuesOf(input: Parameters<typeof validateRegistration>[0]) {
  try {
    validateRegistration(input);
  } catch (error) {
    if (isAppError(error) && error.kind === "validation") return error.details as { path: string }[];
    throw error;
  }
  return [];
}

describe("validateRegistration", () => {
  it("trims the fields", () => {
    expect(validateRegistration(valid)).toEqual({ ...valid, name: "Ada" });
  });

  it("names each bad field", () => {
    expect(issuesOf({ ...valid, name: "  " }).map((i) => i.path)).toEqual(["/name"]);
    expect(issuesOf({ ...valid, surname: null }).map((i) => i.path)).toEqual(["/surname"]);
    expect(issuesOf({ ...valid, username: "ab" }).map((i) => i.path)).toEqual(["/username"]);
    expect(issuesOf({ ...valid, username: "ada lovelace" }).map((i) => i.path)).toEqual(["/username"]);
    expect(issuesOf({ ...valid, username: "a".repeat(33) }).map((i) => i.path)).toEqual(["/username"]);
    expect(issuesOf({ ...valid, mailAddress: "ada@localhost" }).map((i) => i.path)).toEqual(["/mailAddress"]);
    expect(issuesOf({ ...valid, name: "A\u0000da", mailAddress: "x" }).map((i) => i.path)).toEqual([
      "/name",
      "/mailAddress",
    ]);
  });
});

describe("validateRegistration: names are printable (rules.md §7.8)", () => {
  it.each([
    ["name", "Ada\u202Eecalevol"],
    ["name", "A\u2066da"],
    ["name", "A\u200Bda"],
    ["name", "\uFEFFAda"],
    ["surname", "Love\u2028lace"],
    ["surname", "Love\u2029lace"],
    ["surname", "Love\u0085lace"],
    ["username", "ada\u200D"],
  ])("refuses a %s holding %j with 400 naming it", (field, value) => {
    expect(issuesOf({ ...valid, [field]: value })).toEqual([
      { path: `/${field}`, message: expect.stringMatching(/control|invisible|letters/) },
    ]);
  });

  it("counts a name made only of invisible characters as missing", () => {
    expect(issuesOf({ ...valid, name: "\u200B", surname: "\u200B\u2060 " })).toEqual([
      { path: "/name", message: "is required" },
      { path: "/surname", message: "is required" },
    ]);
  });
});

describe("isEmailAddress", () => {
  it.each(["a@b.co", "first.last+tag@sub.example.org", "x_y@example-mail.com"])("accepts %s", (mail) => {
    expect(isEmailAddress(mail)).toBe(true);
  });
  it.each(["plain", "a@b", "a b@c.de", "a@@b.de", "a@-b.de", "@b.de", "a@b..de"])("refuses %s", (mail) => {
    expect(isEmailAddress(mail)).toBe(false);
  });
});
