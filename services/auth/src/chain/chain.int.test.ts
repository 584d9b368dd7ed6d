import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { ADMIN_ROLE, createChainClient, registryAt, UserStatus, waitForReceipt } from "@fundraise/contracts";
import { type FreshChain, startFreshChain } from "@fundraise/contracts/testing";
import { ErrorCode } from "@fundraise/protocol";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createChainReader } from "./chain.ts";

// The role read of every sign-in, against a real chain with the platform deployed.
let chain: FreshChain;
beforeAll(async () => {
  chain = await startFreshChain();
});
afterAll(() => chain?.stop());

const reader = (url = chain.anvil.url, timeoutMs = 5_000) =>
  createChainReader(createChainClient({ url, timeoutMs }), chain.deployment);

async function confirm(sent: Promise<{ hash: string }>) {
  await waitForReceipt(chain.provider, (await sent).hash);
}

describe("createChainReader().roleOf", () => {
  it("reads each user status as its role, and the admin role above any status", async () => {
    const registry = registryAt(chain.deployment.registry, chain.signers[0] as Wallet);
    const subject = Wallet.createRandom().address;
    expect(await reader().roleOf(subject)).toBe("Base");
    for (const [status, role] of [
      [UserStatus.Whitelisted, "Whitelist"],
      [UserStatus.Blacklisted, "Blacklist"],
      [UserStatus.Viewer, "Viewer"],
      [UserStatus.Default, "Base"],
    ] as const) {
      await confirm(registry.editUserStatus(subject, status));
      expect(await reader().roleOf(subject), role).toBe(role);
    }
    await confirm(registry.editUserStatus(subject, UserStatus.Blacklisted));
    await confirm(registry.grantRole(ADMIN_ROLE, subject));
    expect(await reader().roleOf(subject)).toBe("Admin");
    // The lower-case spelling of an address reads the same account.
    expect(await reader().roleOf(subject.toLowerCase())).toBe("Admin");
  });

  it("fails as CHAIN_UNAVAILABLE when the node is down, answers an error or does not answer in time", async () => {
    const address = Wallet.createRandom().address;
    const silent = createServer(() => {
      // Never answers.
    });
    const failing = createServer((_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify([{ jsonrpc: "2.0", id: 0, error: { code: -32000, message: "boom" } }]));
    });
    await Promise.all([silent, failing].map((s) => new Promise<void>((r) => s.listen(0, "127.0.0.1", r))));
    const urlOf = (s: typeof silent) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
    try {
      for (const url of ["http://127.0.0.1:1", urlOf(failing), urlOf(silent)]) {
        await expect(reader(url, 300).roleOf(address), url).rejects.toMatchObject({
          code: ErrorCode.CHAIN_UNAVAILABLE,
          kind: "unavailable",
        });
      }
    } finally {
      silent.closeAllConnections();
      await Promise.all([silent, failing].map((s) => new Promise((r) => s.close(r))));
    }
  });
});
