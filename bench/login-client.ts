/**
 * The load generator of bench/logins.ts, in a process of its own (so its signing and HTTP work does not
 * share a core with the system it measures). Reads from the environment: GATEWAY_URL, WALLET_KEYS (comma-
 * separated private keys of signed-up, verified users), CONCURRENCY, DURATION_MS. Prints one JSON line:
 * `{ latencies, failures, seconds, cpuMs, kernelMs }` (its own CPU time under load, and the kernel's part).
 *
 * It runs on the same cores as the system, so it is kept lean, as autocannon is for `pnpm bench`: each
 * client owns one kept-alive socket and writes its requests as prepared text, and reads each answer by
 * its Content-Length (bench/lib/http-connection.ts). node:http cost this process about 0.9 ms of CPU per
 * sign-in (two requests), fetch more.
 */
import { getBytes, hashMessage, Wallet } from "ethers";
import secp256k1 from "secp256k1";
import { HttpConnection } from "./lib/http-connection.ts";

/**
 * EIP-191 personal_sign as a wallet does it, with libsecp256k1: ethers' JS signing costs about 2 ms of
 * this process's CPU per sign-in, on the cores the system under test uses too.
 */
function personalSign(privateKey: Uint8Array, message: string): string {
  const { signature, recid } = secp256k1.ecdsaSign(getBytes(hashMessage(message)), privateKey);
  return `0x${Buffer.from(signature).toString("hex")}${(27 + recid).toString(16)}`;
}

const gateway = new URL(process.env.GATEWAY_URL as string);
const wallets = (process.env.WALLET_KEYS as string).split(",").map((key) => {
  const wallet = new Wallet(key);
  return {
    address: wallet.address,
    key: getBytes(wallet.privateKey),
    nonceRequest: HttpConnection.request("GET", gateway.host, `/Authentication/GetNonce/${wallet.address}`),
  };
});
const concurrency = Number(process.env.CONCURRENCY);
const durationMs = Number(process.env.DURATION_MS);

const latencies: number[] = [];
let failures = 0;
const until = Date.now() + durationMs;
const started = performance.now();
const cpuAtStart = process.cpuUsage();
const connections = await Promise.all(
  Array.from({ length: concurrency }, () => HttpConnection.open(gateway.hostname, Number(gateway.port))),
);
await Promise.all(
  connections.map(async (connection, worker) => {
    for (let i = worker; Date.now() < until; i += concurrency) {
      const wallet = wallets[i % wallets.length] as (typeof wallets)[number];
      const t0 = performance.now();
      const issued = await connection.send(wallet.nonceRequest);
      const nonce = (JSON.parse(issued.body) as { data: number }).data;
      const body = JSON.stringify({
        address: wallet.address,
        signedMessage: personalSign(wallet.key, `LOGIN: ${nonce}`),
      });
      const login = await connection.send(
        HttpConnection.request("POST", gateway.host, "/Authentication/Login", body),
      );
      if (login.status === 200) latencies.push(performance.now() - t0);
      else failures++;
    }
  }),
);
const cpu = process.cpuUsage(cpuAtStart);
for (const connection of connections) connection.close();
process.stdout.write(
  `${JSON.stringify({
    latencies,
    failures,
    seconds: (performance.now() - started) / 1000,
    cpuMs: (cpu.user + cpu.system) / 1000,
    kernelMs: cpu.system / 1000,
  })}\n`,
);
