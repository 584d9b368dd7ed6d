import { createKuboIpfs } from "@fundraise/ipfs";
import { fakeKuboNodes } from "@fundraise/ipfs/testing";
import { silentLogger } from "@fundraise/service-kit/testing";
import { afterEach, describe, expect, it } from "vitest";
import { checkNode } from "./serve.ts";

// The gateway's look at its IPFS node at start-up, against fake nodes that are not there or that hash
// with other import settings (not Kubo, not the stand-in).
const nodes = fakeKuboNodes();
afterEach(() => nodes.closeAll());

describe("the gateway's start-up check of its IPFS node", () => {
  it("a node that is not there neither stops nor delays the start: one look, a warning", async () => {
    const url = await nodes.gone();
    const warnings: string[] = [];
    const log = Object.assign(silentLogger(), { warn: (_: object, msg: string) => warnings.push(msg) });
    const started = performance.now();
    // A refused connection answers at once; a start that waited would wait out the 10 s deadline.
    await checkNode(createKuboIpfs({ url, timeoutMs: 10_000, readTimeoutMs: 10_000 }), log);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(warnings).toEqual(["IPFS API not reachable: uploads answer 503 until it is"]);
  });

  it("a node whose import settings give other CIDs stops the start", async () => {
    const url = await nodes.otherCids();
    const ipfs = createKuboIpfs({ url, timeoutMs: 1000, readTimeoutMs: 1000 });
    await expect(checkNode(ipfs, silentLogger())).rejects.toThrow(/import settings differ/);
  });
});
