import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cidOfDigestHex, digestHexOf, kuboCidOf, kuboDirectoryCidOf } from "../src/index.ts";
import { pseudoRandom } from "./vectors.ts";

/**
 * CID parity without any node: golden vectors (Kubo-attested where marked), as
 * Kubo's default `ipfs add` gives them.
 */
const MiB = 1_048_576;
const utf8 = (s: string) => new TextEncoder().encode(s);

describe("Kubo CIDs without a node (ipfs-unixfs-importer with Kubo's defaults)", () => {
  it.each([
    ["hello world\\n", utf8("hello world\n"), "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o"],
    ["the empty file", new Uint8Array(0), "QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH"],
    ["1 MiB of zeros (Kubo-attested)", new Uint8Array(MiB), "QmVkbauSDEaMP4Tkq6Epm9uW75mWm136n81YH8fGtfwdHU"],
  ])("%s", async (_name, bytes, expected) => {
    expect((await kuboCidOf(bytes)).toString()).toBe(expected);
  });

  it("100 MiB of zeros (Kubo-attested, two levels)", async () => {
    expect((await kuboCidOf(new Uint8Array(100 * MiB))).toString()).toBe(
      "Qmca3PNFKuZnYkiVv1FpcV1AfDUm4qCSHoYjPTBqDAsyk8",
    );
  });

  it("the empty directory is Kubo's well-known QmUNLL…", async () => {
    expect((await kuboDirectoryCidOf({})).toString()).toBe("QmUNLLsPACCz1vLxQVkXqqLX5R1X345qqfHbsf67hvA3Nn");
  });

  it("fileHash is the CIDv0's sha2-256 digest in upper-case hex, and back", () => {
    const hex = digestHexOf("QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o");
    expect(hex).toBe("46d44814b9c5af141c3aaab7c05dc5e844ead5f91f12858b021eba45768b4c0e".toUpperCase());
    expect(cidOfDigestHex(hex).toString()).toBe("QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o");
    expect(cidOfDigestHex(hex.toLowerCase()).toString()).toBe(
      "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o",
    );
    expect(() => cidOfDigestHex("12")).toThrow();
  });

  it("a whitepaper-and-image directory: entries named whitepaper and image, order-independent", async () => {
    const whitepaper = pseudoRandom("whitepaper", 7_777_777);
    const image = pseudoRandom("image", 262_145);
    const a = await kuboDirectoryCidOf({ whitepaper, image });
    const b = await kuboDirectoryCidOf({ image, whitepaper });
    expect(a.version).toBe(0);
    expect(a.toString()).toBe(b.toString());
    expect(a.toString()).not.toBe((await kuboDirectoryCidOf({ whitepaper })).toString());
  });
});

const oracle = "/usr/bin/ipfs_cid";
/** Debian's Rust `ipfs-cid` (installed by .ci/run): an independent implementation of Kubo's file CIDs. */
describe.skipIf(!existsSync(oracle))(
  "the same CIDs as Debian's ipfs_cid (an independent implementation)",
  () => {
    it.each([
      ["pseudo-random, 262143 bytes", 262_143],
      ["pseudo-random, 262144 bytes", 262_144],
      ["pseudo-random, 262145 bytes", 262_145],
      ["pseudo-random, 7777777 bytes", 7_777_777],
      ["zeros, 175 chunks (two levels)", 175 * 262_144],
    ])("%s", async (name, length) => {
      const bytes = name.startsWith("zeros") ? new Uint8Array(length) : pseudoRandom(name, length);
      const dir = mkdtempSync(join(tmpdir(), "cid-"));
      try {
        writeFileSync(join(dir, "f"), bytes);
        const out = JSON.parse(
          execFileSync(oracle, [join(dir, "f")], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }),
        ) as { CIDv0: string };
        expect((await kuboCidOf(bytes)).toString()).toBe(out.CIDv0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  },
);
