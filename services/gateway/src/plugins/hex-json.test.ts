import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { HexJsonScanner } from "./hex-json.ts";

const KEYS = new Set(["filehex", "imageurl"]);

/** Scans `json` in chunks of `size` bytes (1: byte by byte) and parses what remains. */
function scan(json: string, size = 7) {
  const bytes = Buffer.from(json, "utf8");
  const scanner = new HexJsonScanner(KEYS, bytes.length);
  for (let i = 0; i < bytes.length; i += size) scanner.write(bytes.subarray(i, i + size));
  const { text, values } = scanner.end();
  const body = JSON.parse(text) as Record<string, unknown>;
  const bytesOf = (field: string) => {
    const taken = values.take(body[field] as string);
    return taken && "bytes" in taken ? Buffer.from(taken.bytes).toString("hex") : taken;
  };
  return { body, bytesOf, values };
}

describe("HexJsonScanner: hex body fields decoded as the body arrives", () => {
  it("decodes fileHex and imageUrl in any case, at any chunking; the rest parses as JSON", () => {
    const file = randomBytes(3000).toString("hex");
    const image = randomBytes(10).toString("hex").toUpperCase();
    const json = JSON.stringify({
      ProjectName: 'Solar "panels" ☀',
      nested: { fileHex: "not decoded", list: [1, "x", { a: null }] },
      FILEHEX: file,
      imageURL: image,
      markDown: "a\\b\nc",
    });
    for (const size of [1, 2, 3, 7, 64, 100_000]) {
      const { body, bytesOf } = scan(json, size);
      expect(body.ProjectName).toBe('Solar "panels" ☀');
      expect(body.nested).toEqual({ fileHex: "not decoded", list: [1, "x", { a: null }] });
      expect(body.markDown).toBe("a\\b\nc");
      expect(bytesOf("FILEHEX")).toBe(file);
      expect(bytesOf("imageURL")).toBe(image.toLowerCase());
    }
  });

  it("keeps a short non-hex value as its string (an IPFS path), and the empty string as it is", () => {
    const { body, bytesOf } = scan(JSON.stringify({ imageUrl: "/ipfs/QmX/image", fileHex: "" }), 3);
    expect(body).toEqual({ imageUrl: "/ipfs/QmX/image", fileHex: "" });
    expect(bytesOf("imageUrl")).toBeUndefined();
    // Escapes are no hex: a short escaped value is kept for the JSON parser.
    expect(scan('{"fileHex":"ab\\u0030c"}', 1).body).toEqual({ fileHex: "ab0c" });
  });

  it("marks long non-hex, odd-length and escaped long values invalid", () => {
    const long = "ab".repeat(1000);
    for (const value of [`${long}zz`, `${long}a`, `${long}\\u0061b`, `${long}\\"`]) {
      const { bytesOf } = scan(`{"fileHex":"${value}","projectName":"x"}`, 5);
      expect(bytesOf("fileHex"), value.slice(-6)).toEqual({ invalid: true });
    }
  });

  it("leaves anything that is not a top-level object to the JSON parser", () => {
    for (const json of ['["ab"]', '"abcd"', "42", "{}", '{"fileHex":1}', '{"fileHex":null}']) {
      expect(scan(json, 2).body).toEqual(JSON.parse(json));
    }
    const scanner = new HexJsonScanner(KEYS, 10);
    scanner.write(Buffer.from('{"fileHex":"ab'));
    expect(() => JSON.parse(scanner.end().text)).toThrow(SyntaxError); // unterminated: refused as JSON
  });

  it("a client cannot forge a placeholder: the prefix holds a NUL and a random token", () => {
    const { body, bytesOf } = scan(JSON.stringify({ fileHex: "abcd", projectName: "\u0000hex:x:0" }), 4);
    expect(bytesOf("fileHex")).toBe("abcd");
    expect(bytesOf("projectName")).toBeUndefined();
    expect(body.projectName).toBe("\u0000hex:x:0");
  });
});
