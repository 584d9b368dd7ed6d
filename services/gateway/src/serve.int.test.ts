import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createKuboIpfs } from "@fundraise/ipfs";
import { silentLogger } from "@fundraise/service-kit/testing";
import { afterEach, describe, expect, it } from "vitest";
import { checkNode } from "./serve.ts";

// The gateway's look at its IPFS node at start-up, against fake HTTP servers standing in for a node that
// is not there or that hashes with other import settings (not Kubo, not the stand-in).
const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});
async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("the gateway's start-up check of its IPFS node", () => {
  it("a node that is not there neither stops nor delays the start: one look, a warning", async () => {
    const url = await serve(() => undefined);
    await new Promise((resolve) => servers.pop()?.close(resolve));
    const warnings: string[] = [];
    const log = Object.assign(silentLogger(), { warn: (_: object, msg: string) => warnings.push(msg) });
    const started = performance.now();
    await checkNode(createKuboIpfs({ url, timeoutMs: 1000, readTimeoutMs: 1000 }), log);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(warnings).toEqual(["IPFS API not reachable: uploads answer 503 until it is"]);
  });

  it("a node whose import settings give other CIDs stops the start", async () => {
    const url = await serve((req, res) => {
      req.resume();
      res.setHeader("Content-Type", "application/json");
      if (req.url?.startsWith("/api/v0/version")) {
        res.end(JSON.stringify({ Version: "0.99.0" }));
        return;
      }
      res.end(
        `${JSON.stringify({ Name: "x", Hash: "bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4", Size: "12" })}\n`,
      );
    });
    const ipfs = createKuboIpfs({ url, timeoutMs: 1000, readTimeoutMs: 1000 });
    await expect(checkNode(ipfs, silentLogger())).rejects.toThrow(/import settings differ/);
  });
});
