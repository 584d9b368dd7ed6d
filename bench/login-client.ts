/**
 * The load generator of bench/logins.ts, in a process of its own (so its signing and HTTP work does not
 * share a core with the system it measures). Reads from the environment: GATEWAY_URL, WALLET_KEYS (comma-
 * separated private keys of signed-up, verified users), CONCURRENCY, DURATION_MS. Prints one JSON line:
 * `{ latencies: number[], failures: number, seconds: number, cpuMs: number }` (its own CPU time under load).
 */
import { Agent, request } from "node:http";
import { getBytes, hashMessage, hexlify, Wallet } from "ethers";
import secp256k1 from "secp256k1";

// Kept-alive connections, one per client, and node:http rather than fetch: fetch's per-request cost was
// a large part of this process's CPU (it shares the machine's cores with the system it measures).
const agent = new Agent({ keepAlive: true, maxSockets: Number(process.env.CONCURRENCY) });

function send(method: string, url: string, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method, agent, headers: body === undefined ? {} : { "content-type": "application/json" } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/**
 * EIP-191 personal_sign as a wallet does it, with libsecp256k1: ethers' JS signing costs about 2 ms of
 * this process's CPU per sign-in, on the cores the system under test uses too.
 */
function personalSign(privateKey: Uint8Array, message: string): string {
  const { signature, recid } = secp256k1.ecdsaSign(getBytes(hashMessage(message)), privateKey);
  return `${hexlify(signature)}${(27 + recid).toString(16)}`;
}

const gateway = process.env.GATEWAY_URL as string;
const wallets = (process.env.WALLET_KEYS as string).split(",").map((key) => new Wallet(key));
const concurrency = Number(process.env.CONCURRENCY);
const durationMs = Number(process.env.DURATION_MS);

const latencies: number[] = [];
let failures = 0;
const until = Date.now() + durationMs;
const started = performance.now();
const cpuAtStart = process.cpuUsage();
await Promise.all(
  Array.from({ length: concurrency }, async (_, worker) => {
    for (let i = worker; Date.now() < until; i += concurrency) {
      const wallet = wallets[i % wallets.length] as Wallet;
      const t0 = performance.now();
      const issued = await send("GET", `${gateway}/Authentication/GetNonce/${wallet.address}`);
      const nonce = (JSON.parse(issued.text) as { data: number }).data;
      const login = await send(
        "POST",
        `${gateway}/Authentication/Login`,
        JSON.stringify({
          address: wallet.address,
          signedMessage: personalSign(getBytes(wallet.privateKey), `LOGIN: ${nonce}`),
        }),
      );
      if (login.status === 200) latencies.push(performance.now() - t0);
      else failures++;
    }
  }),
);
const cpu = process.cpuUsage(cpuAtStart);
agent.destroy();
process.stdout.write(
  `${JSON.stringify({
    latencies,
    failures,
    seconds: (performance.now() - started) / 1000,
    cpuMs: (cpu.user + cpu.system) / 1000,
  })}\n`,
);
