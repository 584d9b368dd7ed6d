import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * FOR TESTS ONLY: HTTP servers standing in for a Kubo RPC API that misbehaves (not Kubo, not the
 * stand-in). Each returns its URL; `closeAll` stops every one of them (call it after each test).
 */
export function fakeKuboNodes() {
  const servers: Server[] = [];
  async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
    const server = createServer(handler);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }
  return {
    serve,
    /** A node that accepts every request and never answers. */
    silent: () => serve(() => undefined),
    /** A URL where nothing listens any more (a server started and closed). */
    async gone(): Promise<string> {
      const url = await serve(() => undefined);
      const server = servers.pop() as Server;
      await new Promise((resolve) => server.close(resolve));
      return url;
    },
    /** A node whose add answers a CIDv1 with raw leaves: import settings other than Kubo's defaults. */
    otherCids: () =>
      serve((req, res) => {
        req.resume();
        res.setHeader("Content-Type", "application/json");
        if (req.url?.startsWith("/api/v0/version")) {
          res.end(JSON.stringify({ Version: "0.99.0" }));
          return;
        }
        const hash = "bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4";
        res.end(`${JSON.stringify({ Name: "x", Hash: hash, Size: "12" })}\n`);
      }),
    async closeAll(): Promise<void> {
      for (const server of servers.splice(0)) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  };
}
