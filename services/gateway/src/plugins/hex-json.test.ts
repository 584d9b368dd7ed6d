import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { HexJsonScanner } from "./hex-json.ts";

const KEYS = new Set(["filehex", "imageurl"]);

/** What a value's sink heard: its parts, and how the value ended. */
interface Heard {
  parts: Buffer[];
  outcome: "open" | "ended" | "failed";
}

/**
 * Scans `json` in chunks of `size` bytes (1: byte by byte), the decoded values going out in parts of
 * `partBytes`, and parses what remains.
 */
function scan(json: string, size = 7, partBytes = 1000) {
  const bytes = Buffer.from(json, "utf8");
  const sinks = new Map<string, Heard>();
  const scanner = new HexJsonScanner(
    KEYS,
    (key) => {
      const heard: Heard = { parts: [], outcome: "open" };
      sinks.set(key, heard);
      return {
        write: (part) => heard.parts.push(Buffer.from(part)),
        end: () => {
          heard.outcome = "ended";
        },
        fail: () => {
          heard.outcome = "failed";
        },
      };
    },
    partBytes,
  );
  for (let i = 0; i < bytes.length; i += size) scanner.write(bytes.subarray(i, i + size));
  const { text, values } = scanner.end();
  const body = JSON.parse(text) as Record<string, unknown>;
  /** The hex of what a field's sink received, once the value ended whole. */
  const bytesOf = (field: string) => {
    const taken = values.take(body[field] as string);
    if (!taken || "invalid" in taken) return taken;
    const heard = sinks.get(field.toLowerCase());
    expect(heard?.outcome).toBe("ended");
    expect(heard?.parts.every((part) => part.length <= partBytes)).toBe(true);
    const all = Buffer.concat(heard?.parts ?? []);
    expect(all.length).toBe(taken.streamed);
    return all.toString("hex");
  };
  return { body, bytesOf, values, sinks };
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

  it("decodes every byte value from digits in any case, wherever a chunk starts in memory", () => {
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const lower = all.toString("hex");
    // Mixed case: every other pair upper-case, and within pairs one digit each way.
    const mixed = lower.replace(/../g, (pair, at: number) =>
      at % 4 === 0 ? pair.toUpperCase() : `${pair[0]?.toUpperCase()}${pair[1]}`,
    );
    for (const size of [1, 2, 3, 5, 1000]) {
      // The digits start at an even (12) and at an odd (19) offset of the body.
      for (const json of [`{"fileHex":"${mixed}"}`, `{"ab":1,"fileHex":"${mixed}"}`]) {
        expect(scan(json, size, 64).bytesOf("fileHex")).toBe(lower);
      }
    }
  });

  it("keeps a short non-hex value as its string (an IPFS path), and the empty string as it is", () => {
    const { body, bytesOf } = scan(JSON.stringify({ imageUrl: "/ipfs/QmX/image", fileHex: "" }), 3);
    expect(body).toEqual({ imageUrl: "/ipfs/QmX/image", fileHex: "" });
    expect(bytesOf("imageUrl")).toBeUndefined();
    // Escapes are no hex: a short escaped value is kept for the JSON parser.
    expect(scan('{"fileHex":"ab\\u0030c"}', 1).body).toEqual({ fileHex: "ab0c" });
  });

  it("marks long non-hex, odd-length and escaped long values invalid; a sink that had parts hears it", () => {
    const long = "ab".repeat(1000);
    // A pair half hex (`ag`), bytes above 0x7f (`é` is C3 A9 in UTF-8), an odd length, escapes.
    for (const value of [
      `${long}zz`,
      `${long}ag`,
      `${long}é0`,
      `${long}a`,
      `${long}\\u0061b`,
      `${long}\\"`,
    ]) {
      const { bytesOf, sinks } = scan(`{"fileHex":"${value}","projectName":"x"}`, 5, 300);
      expect(bytesOf("fileHex"), value.slice(-6)).toEqual({ invalid: true });
      expect(sinks.get("filehex")?.outcome).toBe("failed");
    }
  });

  it("sends a value's bytes as soon as a part is full, before the value ends", () => {
    const sent: number[] = [];
    const scanner = new HexJsonScanner(
      KEYS,
      () => ({
        write: (part) => sent.push(part.length),
        end: () => undefined,
        fail: () => undefined,
      }),
      100,
    );
    scanner.write(Buffer.from(`{"fileHex":"${"ab".repeat(250)}`));
    expect(sent).toEqual([100, 100]);
    scanner.write(Buffer.from(`${"cd".repeat(10)}"}`));
    expect(sent).toEqual([100, 100, 60]);
    expect(JSON.parse(scanner.end().text)).toEqual({ fileHex: expect.stringContaining("hex:") });
  });

  it("leaves anything that is not a top-level object to the JSON parser", () => {
    for (const json of ['["ab"]', '"abcd"', "42", "{}", '{"fileHex":1}', '{"fileHex":null}']) {
      expect(scan(json, 2).body).toEqual(JSON.parse(json));
    }
    const scanner = new HexJsonScanner(KEYS, () => ({ write() {}, end() {}, fail() {} }));
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
