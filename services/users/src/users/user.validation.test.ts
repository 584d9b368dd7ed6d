import { isAppError } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import {
  isValidEmail,
  isValidUsername,
  parseAddress,
  parseRole,
  sameText,
  validateNewProfile,
  validateProfile,
} from "./user.validation.ts";

function failure(run: () => unknown): { kind: string; code: string; message: string; details: unknown } {
  try {
    run();
  } catch (error) {
    if (isAppError(error)) return error;
    throw error;
  }
  throw new Error("expected a failure");
}

describe("isValidEmail", () => {
  it.each(["a@b.org", "first.last+tag@sub.example.co.uk", "o'hara@example.com", "x_y-z@ex-ample.io"])(
    "accepts %s",
    (value) => expect(isValidEmail(value)).toBe(true),
  );
  it.each([
    "not-an-email",
    "a@b",
    "@example.org",
    "a@@example.org",
    "a b@example.org",
    "a@-example.org",
    "a@example..org",
    `${"x".repeat(65)}@example.org`,
    `a@${Array.from({ length: 5 }, () => "d".repeat(60)).join(".")}.org`, // over 254 characters
  ])("refuses %s", (value) => expect(isValidEmail(value)).toBe(false));
});

describe("isValidUsername", () => {
  it.each(["abc", "Ada_L.ove-lace", "x".repeat(32), "123"])("accepts %s", (value) =>
    expect(isValidUsername(value)).toBe(true),
  );
  it.each(["ab", "x".repeat(33), "with space", "émile", "semi;colon", ""])("refuses %s", (value) =>
    expect(isValidUsername(value)).toBe(false),
  );
});

describe("parseRole", () => {
  it("matches the five roles case-insensitively and returns the canonical spelling", () => {
    expect(parseRole("admin")).toBe("Admin");
    expect(parseRole("WHITELIST")).toBe("Whitelist");
    expect(parseRole("viewer")).toBe("Viewer");
    expect(parseRole("Base")).toBe("Base");
    expect(parseRole("blackList")).toBe("Blacklist");
  });
  it.each(["", "Owner", "Admins", "Co-Owner", "root"])("refuses %j", (value) =>
    expect(parseRole(value)).toBeUndefined(),
  );
});

describe("parseAddress", () => {
  const checksummed = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4";
  it("returns the EIP-55 form of any letter case", () => {
    expect(parseAddress(checksummed.toLowerCase())).toBe(checksummed);
    expect(parseAddress(checksummed.toUpperCase().replace("0X", "0x"))).toBe(checksummed);
    expect(parseAddress(checksummed)).toBe(checksummed);
  });
  it.each([
    "",
    "0x123",
    `${checksummed}00`,
    checksummed.slice(2),
    "0xZZ38Da6a701c568545dCfcB03FcB875f56beddC4",
    // Mixed case with a wrong EIP-55 checksum (one letter's case changed): a typo, not the same wallet.
    "0x5b38Da6a701c568545dCfcB03FcB875f56beddC4",
  ])("refuses %j", (value) => expect(parseAddress(value)).toBeUndefined());
});

describe("sameText", () => {
  it("compares case-insensitively and never equates a missing value", () => {
    expect(sameText("Ada@Example.org", "ada@example.ORG")).toBe(true);
    expect(sameText("ada", "bob")).toBe(false);
    expect(sameText(null, null)).toBe(false);
    expect(sameText(undefined, "x")).toBe(false);
  });
});

describe("validateProfile", () => {
  it("trims, and leaves out null or absent fields (unchanged)", () => {
    expect(validateProfile({ name: "  Ada ", surname: null, mailAddress: " a@b.org " })).toEqual({
      name: "Ada",
      mailAddress: "a@b.org",
    });
    expect(validateProfile({})).toEqual({});
  });
  it.each([
    [{ name: "   " }, "name"],
    [{ surname: "x".repeat(101) }, "surname"],
    [{ username: "ab" }, "username"],
    [{ username: "bad name" }, "username"],
    [{ mailAddress: "nope" }, "mailAddress"],
  ])("refuses %j with a validation error naming %s", (fields, field) => {
    const error = failure(() => validateProfile(fields));
    expect(error).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
    expect(error.message).toContain(field);
    expect(error.details).toEqual([{ path: `/${field}`, message: expect.any(String) }]);
  });
  it.each([
    [{ name: "Ada\u202Eecalevol" }, "name"],
    [{ name: "\u200B" }, "name"],
    [{ name: "\u200B\u200C\u2060" }, "name"],
    [{ surname: "Love\u2028lace" }, "surname"],
    [{ surname: "\uFEFFLovelace" }, "surname"],
    [{ surname: "Love\u2066lace" }, "surname"],
    [{ name: "A\u0007da" }, "name"],
    [{ username: "ada\u200B" }, "username"],
  ])("refuses invisible, bidi and control characters: %j → 400 naming %s", (fields, field) => {
    const error = failure(() => validateProfile(fields));
    expect(error).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
    expect(error.details).toEqual([{ path: `/${field}`, message: expect.any(String) }]);
  });
  it("counts a name of invisible characters only as missing", () => {
    expect(failure(() => validateProfile({ name: "\u200B" })).message).toBe("Invalid name: is required.");
  });
  it("checks a complete sign-up the same way", () => {
    const profile = { name: "A", surname: "B", username: "abc", mailAddress: "a@b.org" };
    expect(validateNewProfile({ ...profile, username: " abc " })).toEqual(profile);
    expect(failure(() => validateNewProfile({ ...profile, surname: "" })).message).toContain("surname");
  });
});
