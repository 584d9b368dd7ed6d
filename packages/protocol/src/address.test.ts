import { describe, expect, it } from "vitest";
import { ADDRESS_PATTERN, Address, parseAddress } from "./address.ts";
import { validatorOf } from "./message.ts";

// Test vectors of EIP-55 itself, the last four checksum to one letter case.
const CHECKSUMMED = [
  "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
  "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
  "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
  "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
  "0x52908400098527886E0F7030069857D2E4169EE7",
  "0x8617E340B3D01FA5F11F306F4090FD50E238070D",
  "0xde709f2102306220921060314715629080e2fb77",
  "0x27b1fdb04752bbc536007a920d24acb045561c26",
];
const upperDigits = (address: string) => `0x${address.slice(2).toUpperCase()}`;
/** Flips the case of the first letter: the typo a checksum exists to catch. */
const flipFirstLetter = (address: string) =>
  address.replace(/[a-fA-F]/, (c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()));

describe("parseAddress", () => {
  it.each(CHECKSUMMED)("keeps the EIP-55 form %s", (address) => {
    expect(parseAddress(address)).toBe(address);
  });

  it.each(CHECKSUMMED)("checksums %s sent all lower-case or all upper-case", (address) => {
    expect(parseAddress(address.toLowerCase())).toBe(address);
    expect(parseAddress(upperDigits(address))).toBe(address);
  });

  it("accepts an address without letters, and ignores white space around one", () => {
    expect(parseAddress(`0x${"0".repeat(39)}1`)).toBe(`0x${"0".repeat(39)}1`);
    expect(parseAddress(` ${CHECKSUMMED[0]}\n`)).toBe(CHECKSUMMED[0]);
  });

  it.each(CHECKSUMMED.slice(0, 4))("refuses %s with a wrong mixed-case checksum", (address) => {
    const typo = flipFirstLetter(address);
    expect(typo).not.toBe(address);
    expect(typo.toLowerCase()).toBe(address.toLowerCase());
    expect(parseAddress(typo)).toBeUndefined();
  });

  it("refuses a wrong checksum of an address whose checksum it already knows (the remembered form)", () => {
    const [address] = CHECKSUMMED as [string];
    expect(parseAddress(address.toLowerCase())).toBe(address);
    expect(parseAddress(flipFirstLetter(address))).toBeUndefined();
    expect(parseAddress(address)).toBe(address);
  });

  it.each([
    ["empty", ""],
    ["too short", "0x123"],
    ["too long", `${CHECKSUMMED[0]}00`],
    ["without 0x", CHECKSUMMED[0]!.slice(2)],
    ["with 0X", `0X${CHECKSUMMED[0]!.slice(2)}`],
    ["not hex", "0xZZ38Da6a701c568545dCfcB03FcB875f56beddC4"],
    ["inner space", "0x5aAeb6053F3E94C9b9A09f33669435E7 f1BeAed"],
    ["an ICAP", "XE7338O073KYGTWWZN0F2WZ0R8PX5ZPPZS"],
  ])("refuses %s", (_what, value) => {
    expect(parseAddress(value)).toBeUndefined();
  });
});

describe("the Address schema", () => {
  const check = validatorOf(Address).check;

  it("has the pattern of the rule", () => {
    expect(Address).toMatchObject({ type: "string", pattern: ADDRESS_PATTERN.source });
  });

  it("accepts every address the rule accepts, in any of its accepted forms", () => {
    for (const address of CHECKSUMMED) {
      expect(check(address)).toBe(true);
      expect(check(address.toLowerCase())).toBe(true);
      expect(check(upperDigits(address))).toBe(true);
    }
  });

  it("refuses what is not 0x and 40 hex digits (the checksum is parseAddress's)", () => {
    for (const value of ["", "0x123", CHECKSUMMED[0]!.slice(2), `0X${CHECKSUMMED[0]!.slice(2)}`]) {
      expect(check(value)).toBe(false);
    }
  });
});
