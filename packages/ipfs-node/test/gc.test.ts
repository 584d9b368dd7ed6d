import { mkdtempSync, rmSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FsBlockstore } from "blockstore-fs";
import { importer } from "ipfs-unixfs-importer";
import { create, type KuboRPCClient } from "kubo-rpc-client";
import { CID } from "multiformats/cid";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type IpfsNode, KUBO_DEFAULTS, kuboCidOf, startIpfsNode } from "../src/index.ts";
import { pseudoRandom } from "./vectors.ts";

/**
 * `repo/gc` on OUR KUBO-RPC STAND-IN (not Kubo), through the real kubo-rpc-client: Kubo's mark and sweep
 * from the recursive pins, and Kubo's GC lock (an add in progress keeps its blocks, the GC waits for it).
 */
const KUBO_ADD = { cidVersion: 0, rawLeaves: false, chunker: "size-262144", hashAlg: "sha2-256" } as const;
const CHUNK = 262_144;

async function readAll(source: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of source) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** How Kubo names a removed block: the CIDv1 raw of its multihash. */
const asRemoved = (cid: CID | string) =>
  CID.createV1(0x55, (typeof cid === "string" ? CID.parse(cid) : cid).multihash).toString();

/** Every block Kubo's default add of these bytes stores, as `repo gc` would name them. */
async function blocksOf(content: Uint8Array): Promise<string[]> {
  const put: string[] = [];
  const recorder = {
    put: async (cid: CID) => {
      put.push(asRemoved(cid));
      return cid;
    },
  };
  for await (const _ of importer([{ content }], recorder, KUBO_DEFAULTS));
  return [...new Set(put)].sort();
}

describe("garbage collection on the Kubo-RPC stand-in (not Kubo)", () => {
  let dataDir: string;
  let node: IpfsNode;
  let ipfs: KuboRPCClient;
  const gc = async () => {
    const removed: string[] = [];
    for await (const result of ipfs.repo.gc()) {
      expect(result.err).toBeFalsy();
      removed.push(result.cid!.toString());
    }
    return removed.sort();
  };
  const storedBlocks = async () =>
    (await readdir(join(dataDir, "blocks"), { recursive: true })).filter((f) => f.endsWith(".data")).length;

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "ipfs-node-gc-"));
    node = await startIpfsNode({ dataDir });
    ipfs = create({ url: node.url, timeout: 10_000 });
  });
  afterEach(async () => {
    await node.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("a pinned directory survives and reads back byte for byte", async () => {
    const whitepaper = pseudoRandom("gc whitepaper", 600_000);
    const image = pseudoRandom("gc image", 1234);
    let dir = "";
    for await (const entry of ipfs.addAll(
      [
        { path: "whitepaper", content: whitepaper },
        { path: "image", content: image },
      ],
      { ...KUBO_ADD, pin: true, wrapWithDirectory: true },
    )) {
      if (entry.path === "") dir = entry.cid.toString();
    }
    const before = await storedBlocks();
    expect(await gc()).toEqual([]);
    expect(await storedBlocks()).toBe(before);
    expect((await readAll(ipfs.cat(`/ipfs/${dir}/whitepaper`))).equals(Buffer.from(whitepaper))).toBe(true);
    expect((await readAll(ipfs.cat(`/ipfs/${dir}/image`))).equals(Buffer.from(image))).toBe(true);
  });

  it("an unpinned add is collected (Kubo does too): its cat then fails at once", async () => {
    const bytes = pseudoRandom("gc unpinned", 300_000);
    const added = await ipfs.add(bytes, { ...KUBO_ADD, pin: false });
    expect(await gc()).toEqual(await blocksOf(bytes));
    expect(await storedBlocks()).toBe(0);
    const started = Date.now();
    await expect(readAll(ipfs.cat(added.cid))).rejects.toThrow(/not found/);
    // Not a wait for the network (Kubo's, for minutes): seconds tell them apart on a slow machine too.
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("a block shared by a pinned and an unpinned add survives; the unpinned add's own blocks go", async () => {
    const pinned = pseudoRandom("gc shared", 600_000);
    // The same first chunk (one shared leaf block), then bytes of its own.
    const unpinned = Buffer.concat([pinned.subarray(0, CHUNK), pseudoRandom("gc own tail", 1000)]);
    const a = await ipfs.add(pinned, { ...KUBO_ADD, pin: true });
    const b = await ipfs.add(unpinned, { ...KUBO_ADD, pin: false });
    const sharedLeaf = await kuboCidOf(pinned.subarray(0, CHUNK));
    const removed = await gc();
    expect(removed).toContain(asRemoved(b.cid));
    expect(removed).not.toContain(asRemoved(sharedLeaf));
    expect(removed).toEqual((await blocksOf(unpinned)).filter((cid) => cid !== asRemoved(sharedLeaf)));
    expect((await readAll(ipfs.cat(a.cid))).equals(Buffer.from(pinned))).toBe(true);
    expect((await readAll(ipfs.cat(sharedLeaf))).equals(Buffer.from(pinned.subarray(0, CHUNK)))).toBe(true);
    await expect(readAll(ipfs.cat(b.cid))).rejects.toThrow(/not found/);
  });

  it("a pinned add whose body is still arriving keeps all its blocks: the GC waits for it", async () => {
    // The importer writes a file's leaves ten at a time (its blockWriteConcurrency): eleven chunks make
    // the add store blocks before the rest of its body comes.
    const first = pseudoRandom("gc in flight, first", 11 * CHUNK);
    const rest = pseudoRandom("gc in flight, rest", 300_000);
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => {
      finish = resolve;
    });
    async function* body() {
      yield first;
      await gate;
      yield rest;
    }
    const order: string[] = [];
    const adding = (async () => {
      let dir = "";
      for await (const entry of ipfs.addAll([{ path: "whitepaper", content: body() }], {
        ...KUBO_ADD,
        pin: true,
        wrapWithDirectory: true,
      })) {
        if (entry.path === "") dir = entry.cid.toString();
      }
      order.push("add");
      return dir;
    })();
    // The add has stored its first blocks and waits for the rest of its body.
    await expect.poll(storedBlocks, { timeout: 5000, interval: 20 }).toBeGreaterThan(0);
    let collected = false;
    const collecting = gc().then((removed) => {
      collected = true;
      order.push("gc");
      return removed;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(collected).toBe(false);
    finish();
    const [dir, removed] = await Promise.all([adding, collecting]);
    expect(order).toEqual(["add", "gc"]);
    expect(removed).toEqual([]);
    const whitepaper = await readAll(ipfs.cat(`/ipfs/${dir}/whitepaper`));
    expect(whitepaper.equals(Buffer.concat([first, rest]))).toBe(true);
  });

  it("an add cancelled mid-body gives the lock back: a later GC runs and removes its blocks", async () => {
    const controller = new AbortController();
    async function* body() {
      yield pseudoRandom("gc cancelled", 11 * CHUNK);
      await new Promise(() => undefined);
    }
    const adding = (async () => {
      for await (const _ of ipfs.addAll([{ path: "whitepaper", content: body() }], {
        ...KUBO_ADD,
        pin: true,
        wrapWithDirectory: true,
        signal: controller.signal,
      }));
    })();
    await expect.poll(storedBlocks, { timeout: 5000, interval: 20 }).toBeGreaterThan(0);
    controller.abort();
    await expect(adding).rejects.toThrow();
    const removed = await gc();
    expect(removed.length).toBeGreaterThan(0);
    expect(await storedBlocks()).toBe(0);
  });

  it("answers as Kubo: NDJSON {Key:{'/':cid}} per removed block, streamed; quiet and silent taken", async () => {
    const one = pseudoRandom("gc one", 10);
    const two = pseudoRandom("gc two", 300_000);
    await ipfs.add(one, { ...KUBO_ADD, pin: false });
    await ipfs.add(two, { ...KUBO_ADD, pin: false });
    const res = await fetch(`${node.url}/api/v0/repo/gc?quiet=true`, { method: "POST" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.headers.get("x-chunked-output")).toBe("1");
    const lines = (await res.text()).trim().split("\n");
    const keys = lines.map((line) => (JSON.parse(line) as { Key: { "/": string } }).Key["/"]);
    expect(keys.sort()).toEqual([...(await blocksOf(one)), ...(await blocksOf(two))].sort());
    expect(keys.every((cid) => cid.startsWith("bafkrei"))).toBe(true);
    // Nothing left to remove; `silent` removes without answering lines.
    expect(await gc()).toEqual([]);
    await ipfs.add(one, { ...KUBO_ADD, pin: false });
    const silent = await fetch(`${node.url}/api/v0/repo/gc?silent=true`, { method: "POST" });
    expect([silent.status, await silent.text()]).toEqual([200, ""]);
    expect(await storedBlocks()).toBe(0);
  });

  it("refuses the options it does not implement, and fails rather than deletes when a pinned block is missing", async () => {
    const refused = await fetch(`${node.url}/api/v0/repo/gc?stream-errors=true`, { method: "POST" });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { Message: string }).Message).toMatch(/stream-errors.*not supported/);
    // A pin whose DAG lost a block: Kubo aborts the GC ("could not retrieve some links"), deleting nothing.
    const pinned = await ipfs.add(pseudoRandom("gc broken", 600_000), { ...KUBO_ADD, pin: true });
    await ipfs.add(pseudoRandom("gc garbage", 10), { ...KUBO_ADD, pin: false });
    const leaf = await kuboCidOf(pseudoRandom("gc broken", 600_000).subarray(0, CHUNK));
    const disk = new FsBlockstore(join(dataDir, "blocks"));
    await disk.open();
    await disk.delete(leaf);
    const before = await storedBlocks();
    await expect(gc()).rejects.toThrow(/garbage collection aborted/);
    expect(await storedBlocks()).toBe(before);
    await expect(readAll(ipfs.cat(pinned.cid))).rejects.toThrow(/not found/);
  });
});
