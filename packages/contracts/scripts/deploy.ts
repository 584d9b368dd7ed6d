// `pnpm --filter @fundraise/contracts run deploy [--demo] [--out <file>] [--threshold <percent>] [--underlying <address>]`
// Deploys the platform to CHAIN_RPC_URL (default a local anvil at 127.0.0.1:8545) with DEPLOYER_PRIVATE_KEY
// (default anvil account 0) and writes the deployment file the services read.
import path from "node:path";
import { parseArgs } from "node:util";
import { Wallet } from "ethers";
import { anvilDemoSetup, deployPlatform } from "../src/deploy.ts";
import { writeDeployment } from "../src/deployment.ts";
import { createProvider, fetchChainId } from "../src/provider.ts";
import { anvilPrivateKeys } from "../src/testing.ts";
import { packageRoot } from "./compile.ts";

const { values } = parseArgs({
  options: {
    demo: { type: "boolean", default: false },
    out: { type: "string" },
    threshold: { type: "string" },
    underlying: { type: "string" },
  },
});

const url = process.env.CHAIN_RPC_URL || "http://127.0.0.1:8545";
const anvilKeys = anvilPrivateKeys(10);
const key = process.env.DEPLOYER_PRIVATE_KEY || anvilKeys[0];
if (!key) throw new Error("no deployer key");
// A relative --out is taken from where the command was typed (pnpm sets INIT_CWD), the default from the package.
const out = values.out
  ? path.resolve(process.env.INIT_CWD ?? process.cwd(), values.out)
  : path.join(packageRoot, "deployments", "local.json");
const threshold = values.threshold === undefined ? undefined : Number(values.threshold);
if (threshold !== undefined && !(Number.isInteger(threshold) && threshold >= 0 && threshold < 100)) {
  throw new Error("--threshold must be an integer percentage in [0, 100)");
}

const chainId = await fetchChainId(url);
const provider = createProvider(url, chainId);
const deployer = new Wallet(key, provider);
console.log(`deploying to ${url} (chain ${chainId}) from ${deployer.address}`);
const demo = values.demo ? anvilDemoSetup(anvilKeys.map((k) => new Wallet(k).address)) : undefined;
const deployment = await deployPlatform(deployer, {
  threshold,
  underlying: values.underlying,
  demo,
  log: (line) => console.log(`  ${line}`),
});
writeDeployment(out, deployment);
console.log(`wrote ${out}`);
console.log(JSON.stringify(deployment, null, 2));
provider.destroy();
