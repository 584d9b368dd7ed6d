import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FsBlockstore } from "blockstore-fs";
import { create, type KuboRPCClient } from "kubo-rpc-client";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type IpfsNode,
  kuboCidOf,
  kuboDirectoryCidOf,
  STAND_IN_VERSION,
  startIpfsNode,
} from "../src/index.ts";
import { pseudoRandom } from "./vectors.ts";

/**
 * The real kubo-rpc-client over HTTP against OUR STAND-IN (packages/ipfs-node), not Kubo: what the storage
 * service sends, this node must answer as Kubo would, with Kubo's CIDs.
 */
const KUBO_ADD = {
  cidVersion: 0,
  rawLeaves: false,
  chunker: "size-262144",
  hashAlg: "sha2-256",
  trickle: false,
  pin: true,
} as const;
const utf8 = (s: string) => new TextEncoder().encode(s);
const MiB = 1_048_576;

async function readAll(source: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of source) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe("kubo-rpc-client against the Kubo-RPC stand-in (not Kubo)", () => {
  let dataDir: string;
  let node: IpfsNode;
  let ipfs: KuboRPCClient;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "ipfs-node-"));
    node = await startIpfsNode({ dataDir });
    ipfs = create({ url: node.url, timeout: 10_000 });
  });
  afterAll(async () => {
    await node?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("says what it is", async () => {
    expect((await ipfs.version()).version).toBe(STAND_IN_VERSION);
  });

  it.each([
    ["hello world\\n", utf8("hello world\n"), "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o", 20],
    ["the empty file", new Uint8Array(0), "QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH", 6],
    ["1 MiB of zeros", new Uint8Array(MiB), "QmVkbauSDEaMP4Tkq6Epm9uW75mWm136n81YH8fGtfwdHU", 1_048_832],
  ])("add %s gives Kubo's CID and Size, and cat gives the bytes back", async (_n, bytes, cid, size) => {
    const added = await ipfs.add(bytes, KUBO_ADD);
    expect(added.cid.toString()).toBe(cid);
    expect(added.size).toBe(size);
    expect(Buffer.compare(await readAll(ipfs.cat(added.cid)), Buffer.from(bytes))).toBe(0);
    const pins = [];
    for await (const pin of ipfs.pin.ls({ paths: [added.cid] })) pins.push(pin);
    expect(pins.map((p) => [p.cid.toString(), p.type])).toEqual([[cid, "recursive"]]);
  });

  it("only-hash stores nothing: cat of a block it never had fails fast", async () => {
    const bytes = utf8(`never stored ${Date.now()}`);
    const added = await ipfs.add(bytes, { ...KUBO_ADD, onlyHash: true });
    expect(added.cid.toString()).toBe((await kuboCidOf(bytes)).toString());
    const started = Date.now();
    await expect(readAll(ipfs.cat(added.cid))).rejects.toThrow(/not found/);
    // Not a wait for the network (Kubo's, for minutes): seconds tell them apart on a slow machine too.
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("a whitepaper and an image as one directory, exactly as `ipfs add -w` would", async () => {
    const whitepaper = pseudoRandom("whitepaper", 600_000);
    const image = pseudoRandom("image", 1234);
    const entries = [];
    for await (const entry of ipfs.addAll(
      [
        { path: "whitepaper", content: whitepaper },
        { path: "image", content: image },
      ],
      { ...KUBO_ADD, wrapWithDirectory: true },
    )) {
      entries.push(entry);
    }
    const dir = entries.find((e) => e.path === "")!;
    expect(dir.cid.toString()).toBe((await kuboDirectoryCidOf({ whitepaper, image })).toString());
    expect(entries.map((e) => e.path).sort()).toEqual(["", "image", "whitepaper"]);
    expect(
      Buffer.compare(await readAll(ipfs.cat(`/ipfs/${dir.cid}/whitepaper`)), Buffer.from(whitepaper)),
    ).toBe(0);
    expect(Buffer.compare(await readAll(ipfs.cat(`${dir.cid}/image`)), Buffer.from(image))).toBe(0);
    // A path that goes on below a file, or names no entry, is refused, as Kubo refuses it.
    const file = entries.find((e) => e.path === "image")!.cid;
    await expect(readAll(ipfs.cat(`/ipfs/${file}/whitepaper`))).rejects.toThrow(/no link named/);
    await expect(readAll(ipfs.cat(`/ipfs/${dir.cid}/nothing`))).rejects.toThrow();
    // Only the directory is pinned, as Kubo pins the root of an add.
    const pinned = [];
    for await (const pin of ipfs.pin.ls()) pinned.push(pin.cid.toString());
    expect(pinned).toContain(dir.cid.toString());
    expect(pinned).not.toContain(entries.find((e) => e.path === "image")!.cid.toString());
  });

  it("the same directory added six times at once: one CID for all, each shared block written once", async () => {
    const whitepaper = pseudoRandom("six at once", 300);
    const add = async () => {
      let root = "";
      for await (const entry of ipfs.addAll([{ path: "whitepaper", content: whitepaper }], {
        ...KUBO_ADD,
        wrapWithDirectory: true,
      })) {
        if (entry.path === "") root = entry.cid.toString();
      }
      return root;
    };
    // Two writers of one block file made the second retry its rename ten times, 100 ms apart (0.9 s per
    // shared block). Counted, not timed: every block file is written by one writer, however slow the machine.
    const writes = vi.spyOn(FsBlockstore.prototype, "put");
    let roots: string[];
    let written: string[];
    try {
      roots = await Promise.all(Array.from({ length: 6 }, add));
      written = writes.mock.calls.map(([cid]) => Buffer.from(cid.multihash.bytes).toString("hex"));
    } finally {
      writes.mockRestore();
    }
    expect(new Set(roots)).toEqual(new Set([(await kuboDirectoryCidOf({ whitepaper })).toString()]));
    expect(written.length).toBeGreaterThan(0);
    expect(written.length).toBe(new Set(written).size);
    expect((await readAll(ipfs.cat(`/ipfs/${roots[0]}/whitepaper`))).equals(Buffer.from(whitepaper))).toBe(
      true,
    );
  });

  it("pin rm unpins once; a second rm says 'not pinned', as Kubo does", async () => {
    const added = await ipfs.add(utf8("pin me"), KUBO_ADD);
    expect((await ipfs.pin.rm(added.cid)).toString()).toBe(added.cid.toString());
    await expect(ipfs.pin.rm(added.cid)).rejects.toThrow(/not pinned/);
    expect((await ipfs.pin.add(added.cid)).toString()).toBe(added.cid.toString());
  });

  it("refuses options that would change a CID and that it does not implement", async () => {
    await expect(ipfs.add(utf8("x"), { ...KUBO_ADD, chunker: "rabin-262144" })).rejects.toThrow(
      /not supported/,
    );
    await expect(ipfs.add(utf8("x"), { ...KUBO_ADD, hashAlg: "blake2b-256" })).rejects.toThrow(
      /not supported/,
    );
  });

  it("CIDv1 with raw leaves gives bafk… like Kubo's --cid-version 1", async () => {
    const added = await ipfs.add(utf8("hello world\n"), { cidVersion: 1 });
    expect(added.cid.toString()).toBe("bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4");
  });

  it("blocks and pins survive a restart", async () => {
    const added = await ipfs.add(utf8("persistent"), KUBO_ADD);
    await node.stop();
    node = await startIpfsNode({ dataDir });
    ipfs = create({ url: node.url, timeout: 10_000 });
    expect((await readAll(ipfs.cat(added.cid))).toString()).toBe("persistent");
    const pinned = [];
    for await (const pin of ipfs.pin.ls()) pinned.push(pin.cid.toString());
    expect(pinned).toContain(added.cid.toString());
  });
});
