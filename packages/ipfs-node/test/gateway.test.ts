import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "kubo-rpc-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type IpfsNode, kuboCidOf, startIpfsNode } from "../src/index.ts";
import { pseudoRandom } from "./vectors.ts";

/**
 * The read-only gateway of OUR KUBO-RPC STAND-IN (not Kubo), `GET /ipfs/<cid>/<path>`, with content added
 * through the RPC API as the platform adds a project's: a directory of `whitepaper` and `image`.
 */
const PNG_1X1 = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
  "base64",
);
// A PDF header, then enough bytes for two leaf blocks (a range can cross between them).
const WHITEPAPER = Buffer.concat([
  Buffer.from("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", "latin1"),
  pseudoRandom("pdf", 400_000),
]);
const IMMUTABLE = "public, max-age=29030400, immutable";

describe("the gateway of the Kubo-RPC stand-in (not Kubo)", () => {
  let dataDir: string;
  let node: IpfsNode;
  let dir: string;
  const cids: Record<string, string> = {};
  const get = (path: string, init: RequestInit = {}) =>
    fetch(`${node.url}${path}`, { signal: AbortSignal.timeout(5000), ...init });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "ipfs-node-gateway-"));
    node = await startIpfsNode({ dataDir });
    const ipfs = create({ url: node.url, timeout: 10_000 });
    for await (const entry of ipfs.addAll(
      [
        { path: "whitepaper", content: WHITEPAPER },
        { path: "image", content: PNG_1X1 },
      ],
      { cidVersion: 0, rawLeaves: false, chunker: "size-262144", pin: true, wrapWithDirectory: true },
    )) {
      cids[entry.path] = entry.cid.toString();
    }
    dir = cids[""]!;
  });
  afterAll(async () => {
    await node?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it.each([
    ["whitepaper", WHITEPAPER, "application/pdf"],
    ["image", PNG_1X1, "image/png"],
  ])(
    "GET /ipfs/<dir>/%s: its bytes, sniffed type, immutable caching, Etag its CID",
    async (name, bytes, type) => {
      const res = await get(`/ipfs/${dir}/${name}`);
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
      expect(Object.fromEntries(res.headers)).toMatchObject({
        "content-type": type,
        "content-length": String(bytes.length),
        "cache-control": IMMUTABLE,
        etag: `"${cids[name]}"`,
        "x-ipfs-path": `/ipfs/${dir}/${name}`,
        "accept-ranges": "bytes",
        "access-control-allow-origin": "*",
      });
    },
  );

  it("a file by its own CID, without a name: the bytes still decide the type", async () => {
    const res = await get(`/ipfs/${cids.image}`);
    expect([res.status, res.headers.get("content-type")]).toEqual([200, "image/png"]);
    expect(Buffer.from(await res.arrayBuffer()).equals(PNG_1X1)).toBe(true);
  });

  it("byte ranges: 206 with Content-Range (across two blocks, open-ended, suffix); past the end 416", async () => {
    const size = WHITEPAPER.length;
    for (const [range, start, end] of [
      ["bytes=262100-262199", 262_100, 262_199],
      [`bytes=${size - 5}-`, size - 5, size - 1],
      ["bytes=-10", size - 10, size - 1],
      ["bytes=0-0", 0, 0],
      [`bytes=100-${size + 1000}`, 100, size - 1],
    ] as const) {
      const res = await get(`/ipfs/${dir}/whitepaper`, { headers: { Range: range } });
      expect(res.status, range).toBe(206);
      expect(res.headers.get("content-range"), range).toBe(`bytes ${start}-${end}/${size}`);
      expect(res.headers.get("content-length"), range).toBe(String(end - start + 1));
      expect(res.headers.get("content-type"), range).toBe("application/pdf");
      expect(Buffer.from(await res.arrayBuffer()).equals(WHITEPAPER.subarray(start, end + 1)), range).toBe(
        true,
      );
    }
    const past = await get(`/ipfs/${dir}/whitepaper`, { headers: { Range: `bytes=${size}-` } });
    expect([past.status, past.headers.get("content-range")]).toEqual([416, `bytes */${size}`]);
    expect((await get(`/ipfs/${dir}/whitepaper`, { headers: { Range: "lines=1-2" } })).status).toBe(416);
  });

  it("a well-formed CID the node does not have: 404 at once, never a wait", async () => {
    const absent = await kuboCidOf(pseudoRandom(`never added ${Date.now()}`, 100));
    const started = performance.now();
    // Kubo would look for it on the network, for minutes: seconds tell "at once" apart on a slow machine too.
    const res = await get(`/ipfs/${absent}`, { signal: AbortSignal.timeout(10_000) });
    expect(res.status).toBe(404);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect((await get(`/ipfs/${absent}/whitepaper`)).status).toBe(404);
  });

  it("garbage for a CID is 400; no such entry, a path below a file, a directory: 404", async () => {
    const garbage = await get("/ipfs/not-a-cid/whitepaper");
    expect(garbage.status).toBe(400);
    expect(await garbage.text()).toMatch(/invalid cid/);
    expect((await get("/ipfs/")).status).toBe(400);
    expect((await get(`/ipfs/${dir}/nothing`)).status).toBe(404);
    expect((await get(`/ipfs/${dir}/image/below`)).status).toBe(404);
    expect((await get(`/ipfs/${dir}`)).status).toBe(404);
    expect((await get(`/ipfs/${dir}/`)).status).toBe(404);
  });

  it("HEAD: the headers of the GET, no body", async () => {
    const res = await get(`/ipfs/${dir}/whitepaper`, { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/pdf");
    expect(res.headers.get("content-length")).toBe(String(WHITEPAPER.length));
    expect(res.headers.get("etag")).toBe(`"${cids.whitepaper}"`);
    expect((await res.arrayBuffer()).byteLength).toBe(0);
  });

  it("If-None-Match its Etag: 304; ?filename= names it (and its type), download=true makes it an attachment", async () => {
    const cached = await get(`/ipfs/${dir}/image`, { headers: { "If-None-Match": `"${cids.image}"` } });
    expect(cached.status).toBe(304);
    const named = await get(`/ipfs/${dir}/whitepaper?filename=paper.txt&download=true`);
    expect(named.headers.get("content-disposition")).toBe(
      `attachment; filename="paper.txt"; filename*=UTF-8''paper.txt`,
    );
    // Go's extension table has no .txt: the bytes decide.
    expect(named.headers.get("content-type")).toBe("application/pdf");
    const png = await get(`/ipfs/${dir}/whitepaper?filename=paper.png`);
    expect(png.headers.get("content-type")).toBe("image/png");
    await png.arrayBuffer();
    await named.arrayBuffer();
  });

  it("read only: other methods are 405; the RPC API is untouched", async () => {
    const res = await get(`/ipfs/${dir}/image`, { method: "POST" });
    expect([res.status, res.headers.get("allow")]).toEqual([405, "GET, HEAD, OPTIONS"]);
    expect((await get("/api/v0/version", { method: "POST" })).status).toBe(200);
  });
});
