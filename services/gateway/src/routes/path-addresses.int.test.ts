import { ADDRESS_PROBLEM, AuthRpc, ChainRpc } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../test/harness.ts";

// Addresses in paths follow the protocol's one rule (packages/protocol/src/address.ts): lower- or
// upper-case digits are checksummed on the way in; mixed case must be a valid EIP-55 checksum, else 400.
const CHECKSUMMED = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4";
const WRONG_CHECKSUM = "0x5b38Da6a701c568545dCfcB03FcB875f56beddC4"; // one letter's case changed

let h: Harness;
const seen: string[] = [];
beforeAll(async () => {
  h = await createHarness();
  await h.bus.serve(AuthRpc.nonce, async ({ address }) => {
    seen.push(address);
    return 12345678;
  });
  for (const rpc of [ChainRpc.whitelistInsertLogs, ChainRpc.whitelistRemoveLogs]) {
    await h.bus.serve(rpc, async ({ address }) => {
      seen.push(address);
      return { logs: [], indexedBlock: 1 };
    });
  }
  await h.bus.serve(ChainRpc.whitelisted, async ({ address }) => {
    seen.push(address);
    return { whitelisted: false, indexedBlock: 1 };
  });
});
afterAll(() => h?.close());

const routes = [
  "/Authentication/GetNonce/",
  "/EventDebug/DebugAdd/",
  "/EventDebug/DebugRemove/",
  "/EventDebug/Whitelisted/",
];

describe("addresses in paths", () => {
  it.each(routes)("%s: any single letter case reaches the service as EIP-55", async (route) => {
    for (const sent of [CHECKSUMMED, CHECKSUMMED.toLowerCase(), `0x${CHECKSUMMED.slice(2).toUpperCase()}`]) {
      seen.length = 0;
      const res = await h.app.inject(`${route}${sent}`);
      expect(res.statusCode, sent).toBe(200);
      expect(seen).toEqual([CHECKSUMMED]);
    }
  });

  it.each(routes)("%s: a wrong mixed-case checksum is 400, and nothing is asked", async (route) => {
    seen.length = 0;
    const res = await h.app.inject(`${route}${WRONG_CHECKSUM}`);
    expect(res.statusCode).toBe(400);
    expect(res.headers["x-error-code"]).toBe("VALIDATION_FAILED");
    expect(res.json()).toEqual({
      data: null,
      success: false,
      message: `Invalid params: /address ${ADDRESS_PROBLEM}.`,
    });
    expect(seen).toEqual([]);
  });
});
