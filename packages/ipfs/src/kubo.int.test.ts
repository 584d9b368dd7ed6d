import { ErrorCode, StorageErrorCode } from "@fundraise/protocol";
import { silentLogger } from "@fundraise/service-kit";
import { expectAppError } from "@fundraise/service-kit/testing";
import { afterEach, describe, expect, it } from "vitest";
import { checkIpfs, createKuboIpfs } from "./kubo.ts";
import { fakeKuboNodes } from "./testing.ts";

const nodes = fakeKuboNodes();
afterEach(() => nodes.closeAll());

describe("the Kubo RPC client's failures as the platform's errors", () => {
  it("a node that accepts and never answers: 504 after the deadline, not a hang", async () => {
    const url = await nodes.silent();
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
    // Two 300 ms deadlines, against a node that never answers (no deadline: a hang until the test's limit).
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it("nothing listening: 503", async () => {
    const url = await nodes.gone();
    const ipfs = createKuboIpfs({ url, timeoutMs: 1000, readTimeoutMs: 1000 });
    await expectAppError(ipfs.selfCheck(), "unavailable", ErrorCode.IPFS_UNAVAILABLE);
  });

  it("refuses to start on a node whose import settings give other CIDs", async () => {
    // What a node with CIDv1 / raw leaves by default answers.
    const url = await nodes.otherCids();
    const ipfs = createKuboIpfs({ url, timeoutMs: 1000, readTimeoutMs: 1000 });
    await expect(checkIpfs(ipfs, 0, silentLogger())).rejects.toThrow(/import settings differ/);
  });

  it("follows no redirect (patched kubo-rpc-client): a streamed add is sent once, not cloned and kept", async () => {
    // undici clones a request it may have to redirect, which tees a streamed body: every chunk copied and
    // the whole upload kept by the branch nobody reads. The patch asks for redirect "error"; a node that
    // answers a redirect is then a failure (503), and the add never reaches the other address.
    let followed = 0;
    const elsewhere = await nodes.serve((req, res) => {
      followed++;
      req.resume();
      res.end("{}");
    });
    const url = await nodes.serve((req, res) => {
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
