import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChainRpcError, checkChainId, createChainClient } from "./chain-client.ts";
import { webSocketUrlOf } from "./new-heads.ts";
import { type AnvilInstance, startAnvil } from "./testing.ts";

let anvil: AnvilInstance;
beforeAll(async () => {
  anvil = await startAnvil();
});
afterAll(async () => {
  await anvil?.stop();
});

/** A node stand-in that answers every request with `answer`. */
async function fakeNode(answer: (req: IncomingMessage, res: ServerResponse) => void) {
  const server = createServer(answer);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error("expected a failure");
    },
    (error: unknown) => error as ChainRpcError,
  );

describe("the chain client", () => {
  it("reads the chain: id, head, blocks, logs, eth_call, batches, and typed contracts through its provider", async () => {
    const client = createChainClient({ url: anvil.url, timeoutMs: 5_000 });
    try {
      expect(await client.chainId()).toBe(anvil.chainId);
      const head = await client.blockNumber();
      const { head: again, block } = await client.headAndBlock(head);
      expect(again).toBeGreaterThanOrEqual(head);
      expect(block).toMatchObject({ number: head, hash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
      expect(await client.blocks([head, head + 1_000])).toEqual([block, null]);
      expect(await client.getLogs({ fromBlock: 0, toBlock: head, address: [], topics: [] })).toEqual([]);
      expect(await client.call("0x000000000000000000000000000000000000dEaD", "0x", head)).toBe("0x");
      expect(
        await client.batch([
          { method: "eth_chainId", params: [] },
          { method: "net_version", params: [] },
        ]),
      ).toEqual([`0x${anvil.chainId.toString(16)}`, String(anvil.chainId)]);
      const provider = client.provider(anvil.chainId);
      expect(await provider.getBlockNumber()).toBeGreaterThanOrEqual(head);
      await checkChainId(client, anvil.chainId, () => {
        throw new Error("reachable");
      });
      await expect(checkChainId(client, anvil.chainId + 1, () => undefined)).rejects.toThrow(/serves chain/);
    } finally {
      client.close();
    }
  });

  it("tells a refusal (ask for less) from a failure (ask again later)", async () => {
    const tooBusy = await fakeNode((_req, res) => {
      res.statusCode = 429;
      res.end();
    });
    const tooLarge = await fakeNode((_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({ jsonrpc: "2.0", id: 0, error: { code: -32000, message: "block range too large" } }),
      );
    });
    const silent = await fakeNode(() => undefined);
    const single = await fakeNode((_req, res) =>
      res.end(JSON.stringify({ jsonrpc: "2.0", id: 0, result: "0x1" })),
    );
    const client = (url: string) => createChainClient({ url, timeoutMs: 300 });
    try {
      for (const [url, refused] of [
        [tooBusy.url, true],
        [tooLarge.url, true],
        [silent.url, true],
        ["http://127.0.0.1:1", false],
      ] as const) {
        const error = await failureOf(
          client(url).getLogs({ fromBlock: 0, toBlock: 9, address: [], topics: [] }),
        );
        expect(error, url).toBeInstanceOf(ChainRpcError);
        expect(error.refused, `${url}: ${error.message}`).toBe(refused);
      }
      const notABatch = await failureOf(client(single.url).blocks([1, 2]));
      expect(notABatch).toMatchObject({ refused: false, message: "a batch answered with a single response" });
      let told: unknown;
      await checkChainId(client("http://127.0.0.1:1"), 1, (err) => {
        told = err;
      });
      expect(told).toBeInstanceOf(ChainRpcError);
    } finally {
      await Promise.all([tooBusy, tooLarge, silent, single].map((node) => node.close()));
    }
  });

  it("subscribes at the WebSocket endpoint of its JSON-RPC URL", () => {
    expect(webSocketUrlOf("http://127.0.0.1:8545")).toBe("ws://127.0.0.1:8545/");
    expect(webSocketUrlOf("https://rpc.example.org/v1/key")).toBe("wss://rpc.example.org/v1/key");
    expect(webSocketUrlOf("ws://node:8546")).toBe("ws://node:8546/");
  });
});
