import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ErrorCode, StorageErrorCode } from "@fundraise/protocol";
import { silentLogger } from "@fundraise/service-kit";
import { expectAppError } from "@fundraise/service-kit/testing";
import { afterEach, describe, expect, it } from "vitest";
import { checkIpfs, createKuboIpfs } from "./kubo.ts";

/** Fake HTTP servers standing in for a misbehaving Kubo: silent, or with other import settings. */
const servers: Server[] = [];
async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

describe("the Kubo RPC client's failures as the platform's errors", () => {
  it("a node that accepts and never answers: 504 after the deadline, not a hang", async () => {
    const url = await serve(() => undefined);
    const ipfs = createKuboIpfs({ url, timeoutMs: 300, readTimeoutMs: 300 });
    const started = performance.now();
    await expectAppError(
      ipfs.cat("/ipfs/QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o", 100),
      "timeout",
      StorageErrorCode.IPFS_TIMEOUT,
    );
    await expectAppError(
      ipfs.addDirectory([{ name: "whitepaper", content: new Uint8Array(1) }]),
      "timeout",
      StorageErrorCode.IPFS_TIMEOUT,
    );
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it("nothing listening: 503", async () => {
    const url = await serve(() => undefined);
    servers[0]!.close();
    const ipfs = createKuboIpfs({ url, timeoutMs: 1000, readTimeoutMs: 1000 });
    await expectAppError(ipfs.selfCheck(), "unavailable", ErrorCode.IPFS_UNAVAILABLE);
  });

  it("refuses to start on a node whose import settings give other CIDs", async () => {
    const url = await serve((req, res) => {
      req.resume();
      res.setHeader("Content-Type", "application/json");
      if (req.url?.startsWith("/api/v0/version")) {
        res.end(JSON.stringify({ Version: "0.99.0" }));
        return;
      }
      // What a node with CIDv1 / raw leaves by default would answer.
      res.end(
        `${JSON.stringify({ Name: "x", Hash: "bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4", Size: "12" })}\n`,
      );
    });
    const ipfs = createKuboIpfs({ url, timeoutMs: 1000, readTimeoutMs: 1000 });
    await expect(checkIpfs(ipfs, 0, silentLogger())).rejects.toThrow(/import settings differ/);
  });

  it("follows no redirect (patched kubo-rpc-client): a streamed add is sent once, not cloned and kept", async () => {
    // undici clones a request it may have to redirect, which tees a streamed body: every chunk copied and
    // the whole upload kept by the branch nobody reads. The patch asks for redirect "error"; a node that
    // answers a redirect is then a failure (503), and the add never reaches the other address.
    let followed = 0;
    const elsewhere = await serve((req, res) => {
      followed++;
      req.resume();
      res.end("{}");
    });
    const url = await serve((req, res) => {
      req.resume();
      res.writeHead(307, { Location: `${elsewhere}${req.url}` });
      res.end();
    });
    const ipfs = createKuboIpfs({ url, timeoutMs: 1000, readTimeoutMs: 1000 });
    async function* content() {
      yield new Uint8Array(1024);
    }
    await expectAppError(
      ipfs.addDirectory([{ name: "whitepaper", content: content() }]),
      "unavailable",
      ErrorCode.IPFS_UNAVAILABLE,
    );
    await expectAppError(ipfs.selfCheck(), "unavailable", ErrorCode.IPFS_UNAVAILABLE);
    expect(followed).toBe(0);
  });
});
