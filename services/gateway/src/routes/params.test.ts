import { describe, expect, it } from "vitest";
import { hexToBytes } from "./params.ts";

describe("hexToBytes (fileHex, imageUrl)", () => {
  it("decodes whole bytes in either case, with or without 0x", () => {
    expect(Buffer.from(hexToBytes("0xABcd09", "fileHex")).toString("hex")).toBe("abcd09");
    expect(hexToBytes("", "fileHex").byteLength).toBe(0);
  });

  it.each([
    ["odd length", "abc"],
    ["a letter past f", "ab1g"],
    ["a space", "ab cd"],
    ["a non-hex pair first", "zzab"],
    ["full-width digits", "ａｂ"],
    ["0x twice", "0x0xab"],
    ["a sign", "-1ab"],
  ])("refuses %s", (_, hex) => {
    expect(() => hexToBytes(hex, "fileHex")).toThrow("fileHex must be a hexadecimal string of whole bytes.");
  });
});
