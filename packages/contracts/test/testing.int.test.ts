import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { getAddress, Wallet } from "ethers";
import { describe, expect, it } from "vitest";
import { loadDeployment } from "../src/deployment.ts";
import { fetchChainId } from "../src/provider.ts";
import { deployFresh, startAnvil } from "../src/testing.ts";

describe("startAnvil", () => {
  it("runs independent nodes on free ports with anvil's default accounts and stops them", async () => {
    const [one, two] = await Promise.all([startAnvil(), startAnvil({ chainId: 1337, accounts: 3 })]);
    try {
      expect(one.url).not.toBe(two.url);
      expect(one.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(await fetchChainId(one.url)).toBe(31337);
      expect(await fetchChainId(two.url)).toBe(1337);
      expect(two.chainId).toBe(1337);
      expect(two.accounts).toHaveLength(3);
      const response = await fetch(one.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_accounts", params: [] }),
      });
      const { result } = (await response.json()) as { result: string[] };
      expect(result.map((a) => getAddress(a))).toEqual(one.accounts.map((k) => new Wallet(k).address));
      expect(new Wallet(one.accounts[0]!).address).toBe("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
    } finally {
      await one.stop();
      await two.stop();
    }
    await expect(fetchChainId(one.url, 1_000)).rejects.toThrow();
    await one.stop(); // stopping twice is harmless
  });
});

describe("deployFresh", () => {
  it("deploys the platform with account 0 and returns checksummed addresses", async () => {
    const anvil = await startAnvil();
    try {
      const { deployment, provider, signers } = await deployFresh(anvil.url);
      expect(deployment.chainId).toBe(31337);
      expect(deployment.startBlock).toBe(1);
      for (const address of [deployment.registry, deployment.factory, deployment.bidCoin]) {
        expect(address).toBe(getAddress(address));
        expect((await provider.getCode(address)).length).toBeGreaterThan(2);
      }
      expect(signers[0]?.address).toBe("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
      // Explicit nonces make addresses depend only on the deployer's nonce.
      expect(deployment.registry).toBe("0x5FbDB2315678afecb367f032d93F642f64180aa3");
      provider.destroy();
    } finally {
      await anvil.stop();
    }
  });
});

describe("loadDeployment", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "deployment-"));
  const write = (name: string, content: unknown) => {
    const file = path.join(dir, name);
    writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content));
    return file;
  };
  const valid = {
    chainId: 31337,
    registry: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
    factory: "0xB7f8BC63BbcaD18155201308C8f3540b07f84F5e",
    bidCoin: "0x610178dA211FEF7D417bC0e6FeD39F05609AD788",
    startBlock: 1,
    deployedAt: "2026-11-22T04:31:07.716Z",
  };

  it("reads a deployment file and checksums its addresses", () => {
    expect(loadDeployment(write("ok.json", valid))).toEqual({
      ...valid,
      registry: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
    });
  });

  it("names what is wrong with a bad file", () => {
    expect(() => loadDeployment(path.join(dir, "missing.json"))).toThrow(/cannot read deployment file/);
    expect(() => loadDeployment(write("text.json", "nope"))).toThrow(/is not JSON/);
    expect(() => loadDeployment(write("addr.json", { ...valid, factory: "0x123" }))).toThrow(
      /factory must be an address/,
    );
    expect(() => loadDeployment(write("block.json", { ...valid, startBlock: -1 }))).toThrow(/startBlock/);
    expect(() => loadDeployment(write("time.json", { ...valid, deployedAt: "yesterday" }))).toThrow(
      /deployedAt/,
    );
  });
});
