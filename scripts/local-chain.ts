import { spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { anvilDemoSetup, loadDeployment, writeDeployment } from "@fundraise/contracts";
import { anvilBinaryPath, anvilPrivateKeys, deployFresh } from "@fundraise/contracts/testing";
import type { Logger } from "@fundraise/service-kit";
import { Wallet } from "ethers";

/**
 * The local chain of `pnpm start`: anvil on CHAIN_PORT (8545), its state kept in `.local/chain`, so
 * projects registered on chain survive a restart as the database does. The platform is deployed
 * once, with demo roles for anvil's well-known accounts, and reused while the chain still has it.
 */
export async function startLocalChain(options: { stateDir: string; port: number; log: Logger }) {
  const { port, log } = options;
  const dir = join(options.stateDir, "chain");
  mkdirSync(dir, { recursive: true });
  const child = spawn(
    anvilBinaryPath(),
    [
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--chain-id",
      "31337",
      "--state",
      join(dir, "state.json"),
    ],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    child.kill("SIGTERM");
    await exited;
  };

  const until = Date.now() + 15_000;
  for (;;) {
    const ok = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    })
      .then((r) => r.ok)
      .catch(() => false);
    if (ok) break;
    if (Date.now() > until || child.exitCode !== null) {
      await stop();
      throw new Error(`anvil did not start on port ${port} (is the port taken? set CHAIN_PORT)`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  const deploymentFile = join(dir, "deployment.json");
  if (existsSync(deploymentFile)) {
    const known = loadDeployment(deploymentFile);
    const code = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getCode",
        params: [known.registry, "latest"],
      }),
    }).then((r) => r.json() as Promise<{ result?: string }>);
    if (code.result && code.result !== "0x") {
      log.info({ url, registry: known.registry }, "local chain resumed");
      return { url, deploymentFile, stop };
    }
  }
  const addresses = anvilPrivateKeys(10).map((key) => new Wallet(key).address);
  const { deployment } = await deployFresh(url, { demo: anvilDemoSetup(addresses) });
  writeDeployment(deploymentFile, deployment);
  log.info({ url, registry: deployment.registry, factory: deployment.factory }, "local chain deployed");
  return { url, deploymentFile, stop };
}
