/**
 * Local-chain helpers for tests: a real anvil node per caller, and a fresh platform deployment on it.
 * Import as `@fundraise/contracts/testing`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import path from "node:path";
import { HDNodeWallet, hexlify, type JsonRpcProvider, Mnemonic, randomBytes, Wallet } from "ethers";
import { type DeployOptions, deployPlatform } from "./deploy.ts";
import type { Deployment } from "./deployment.ts";
import { createProvider, fetchChainId } from "./provider.ts";

/** anvil's default mnemonic; its accounts are funded with 10,000 ETH each. */
export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";

// The first ten keys are public, well-known values; deriving them costs ~350 ms of PBKDF2 per process.
const keyCache: string[] = [
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
  "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
  "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
  "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e",
  "0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356",
  "0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97",
  "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6",
];

/** Private keys of the first `count` accounts of anvil's default mnemonic (m/44'/60'/0'/0/i). */
export function anvilPrivateKeys(count = 10): string[] {
  if (keyCache.length < count) {
    // One seed computation, then cheap child derivations.
    const account = HDNodeWallet.fromSeed(Mnemonic.fromPhrase(ANVIL_MNEMONIC).computeSeed()).derivePath(
      "m/44'/60'/0'/0",
    );
    for (let i = keyCache.length; i < count; i++) keyCache.push(account.deriveChild(i).privateKey);
  }
  return keyCache.slice(0, count);
}

/**
 * A new wallet of a random key. Not `Wallet.createRandom()`: that makes a mnemonic and derives the key
 * from it (PBKDF2, 2,048 rounds), 14 ms of CPU against 0.7 ms here; tests that make hundreds of users
 * spent seconds on it.
 */
export const randomWallet = (): Wallet => new Wallet(hexlify(randomBytes(32)));

/** Path of the anvil binary shipped by `@foundry-rs/anvil` (override with `ANVIL_BIN`). */
export function anvilBinaryPath(): string {
  const override = process.env.ANVIL_BIN;
  if (override) return override;
  const arch = process.arch === "x64" ? "amd64" : process.arch;
  const platformPackage = `@foundry-rs/anvil-${process.platform}-${arch}`;
  // The platform package is an optional dependency of @foundry-rs/anvil, so resolve it from there.
  const wrapper = createRequire(import.meta.url).resolve("@foundry-rs/anvil/package.json");
  const manifest = createRequire(wrapper).resolve(`${platformPackage}/package.json`);
  const binary = path.join(
    path.dirname(manifest),
    "bin",
    process.platform === "win32" ? "anvil.exe" : "anvil",
  );
  if (!existsSync(binary)) throw new Error(`anvil binary missing at ${binary}`);
  return binary;
}

export type AnvilOptions = {
  /** Default 31337. */
  chainId?: number;
  /** Number of funded accounts; default 10. */
  accounts?: number;
  /** Seconds between automatic blocks; default: a block per transaction. */
  blockTime?: number;
  /** Milliseconds to wait for the RPC to answer; default 10,000. */
  startTimeoutMs?: number;
  /** Extra command-line arguments. */
  args?: readonly string[];
};

export type AnvilInstance = {
  url: string;
  chainId: number;
  /** Private keys of the funded accounts (anvil's default mnemonic), account 0 first. */
  accounts: string[];
  /** Kills the node and waits for it to exit; safe to call twice. */
  stop(): Promise<void>;
};

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A crashed test run must not leave nodes behind holding ports.
  process.once("exit", () => {
    for (const child of running) child.kill("SIGKILL");
  });
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function rpcAnswers(url: string): Promise<boolean> {
  try {
    await fetchChainId(url, 500);
    return true;
  } catch {
    return false;
  }
}

async function launch(binary: string, port: number, options: AnvilOptions): Promise<AnvilInstance> {
  const chainId = options.chainId ?? 31337;
  const accountCount = options.accounts ?? 10;
  const args = [
    "--host",
    "127.0.0.1",
    "--port",
    String(port),
    "--chain-id",
    String(chainId),
    "--accounts",
    String(accountCount),
    "--mnemonic",
    ANVIL_MNEMONIC,
    "--quiet",
    ...(options.blockTime === undefined ? [] : ["--block-time", String(options.blockTime)]),
    ...(options.args ?? []),
  ];
  const child = spawn(binary, args, { stdio: ["ignore", "ignore", "pipe"] });
  running.add(child);
  installExitHook();
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  let exited = false;
  const exit = new Promise<void>((resolve) => {
    child.once("exit", () => {
      exited = true;
      running.delete(child);
      resolve();
    });
  });
  const spawnError = new Promise<never>((_, reject) => child.once("error", reject));
  spawnError.catch(() => {});

  const stop = async (): Promise<void> => {
    if (exited) return;
    child.kill("SIGTERM");
    const killer = setTimeout(() => child.kill("SIGKILL"), 2_000);
    await exit;
    clearTimeout(killer);
  };

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (options.startTimeoutMs ?? 10_000);
  for (;;) {
    if (await Promise.race([rpcAnswers(url), spawnError])) break;
    if (exited) throw new Error(`anvil exited before answering on port ${port}: ${stderr.trim()}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`anvil did not answer on ${url} in time: ${stderr.trim()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
  return { url, chainId, accounts: anvilPrivateKeys(accountCount), stop };
}

/**
 * Starts anvil on a free loopback port and resolves once its JSON-RPC answers. Call `stop()` when done.
 * A port taken between probing and binding is retried with another port.
 */
export async function startAnvil(options: AnvilOptions = {}): Promise<AnvilInstance> {
  const binary = anvilBinaryPath();
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await launch(binary, await freePort(), options);
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}

export type FreshDeployment = {
  deployment: Deployment;
  provider: JsonRpcProvider;
  /** Wallets for anvil's default accounts; `signers[0]` deployed and is the first admin. */
  signers: Wallet[];
};

/** Deploys the whole platform with anvil account 0 to the node at `url` (see `deployPlatform`). */
export async function deployFresh(url: string, options: DeployOptions = {}): Promise<FreshDeployment> {
  const chainId = await fetchChainId(url);
  const provider = createProvider(url, chainId);
  const signers = anvilPrivateKeys(10).map((key) => new Wallet(key, provider));
  const deployer = signers[0];
  if (!deployer) throw new Error("no anvil account");
  const deployment = await deployPlatform(deployer, options);
  return { deployment, provider, signers };
}

/** A test file's own chain: anvil with the platform deployed on it. */
export type FreshChain = FreshDeployment & {
  anvil: AnvilInstance;
  /** Closes the provider and stops anvil. */
  stop(): Promise<void>;
};

/** Starts anvil (`options`) and deploys the platform on it (`deployFresh`); anvil stops again if that fails. */
export async function startFreshChain(options: AnvilOptions = {}): Promise<FreshChain> {
  const anvil = await startAnvil(options);
  let fresh: FreshDeployment;
  try {
    fresh = await deployFresh(anvil.url);
  } catch (error) {
    await anvil.stop();
    throw error;
  }
  return {
    ...fresh,
    anvil,
    async stop() {
      fresh.provider.destroy();
      await anvil.stop();
    },
  };
}

// ---------------------------------------------------------------- chain control

/** Takes an `evm_snapshot`; pass the id to `revertTo`. */
export async function snapshot(provider: JsonRpcProvider): Promise<string> {
  return (await provider.send("evm_snapshot", [])) as string;
}

/** Reverts to a snapshot (which is consumed: take a new one to revert again). */
export async function revertTo(provider: JsonRpcProvider, id: string): Promise<void> {
  const ok = (await provider.send("evm_revert", [id])) as boolean;
  if (!ok) throw new Error(`evm_revert ${id} failed`);
}

/** Moves chain time forward and mines a block. */
export async function increaseTime(provider: JsonRpcProvider, seconds: number): Promise<void> {
  await provider.send("evm_increaseTime", [seconds]);
  await provider.send("evm_mine", []);
}

/** Fixes the timestamp of the next block (the next transaction's block, or the next `mine`). */
export async function setNextBlockTimestamp(
  provider: JsonRpcProvider,
  timestamp: number | bigint,
): Promise<void> {
  await provider.send("evm_setNextBlockTimestamp", [Number(timestamp)]);
}

export async function mine(provider: JsonRpcProvider, blocks = 1): Promise<void> {
  await provider.send("anvil_mine", [`0x${blocks.toString(16)}`]);
}

/** Timestamp of the latest block. */
export async function latestTimestamp(provider: JsonRpcProvider): Promise<number> {
  const block = await provider.getBlock("latest");
  if (!block) throw new Error("no latest block");
  return block.timestamp;
}
