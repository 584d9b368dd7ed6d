/**
 * `pnpm bench:logins`: sign-ins per second through the gateway, each one the full client sequence
 * GetNonce → personal_sign → Login, on the whole system as separate processes (users, auth, gateway,
 * a real chain for the role refresh). Prints logins/s and p50/p99 of the sequence.
 *
 *   pnpm bench:logins [-- --users 20 --concurrency 10 --duration 10]
 */
import { parseArgs } from "node:util";
import { Wallet } from "ethers";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    users: { type: "string", default: "20" },
    concurrency: { type: "string", default: "10" },
    duration: { type: "string", default: "10" },
  },
});
const users = Number(values.users);
const concurrency = Number(values.concurrency);
const durationMs = Number(values.duration) * 1000;

// Limits are the subject's defence, not what is measured here.
Object.assign(process.env, {
  AUTH_RATE_LIMIT_PER_MINUTE: "1000000",
  RATE_LIMIT_PER_MINUTE: "1000000",
  NONCE_PER_IP_PER_MINUTE: "1000000",
  NONCE_PER_IP_ADDRESS_PER_MINUTE: "1000000",
  LOGIN_FAILURES_PER_IP_PER_MINUTE: "1000000",
  LOGIN_FAILURES_PER_IP_ADDRESS_PER_MINUTE: "1000000",
  REGISTER_PER_IP_PER_HOUR: "1000000",
  REGISTER_PER_IP_ADDRESS_PER_HOUR: "1000000",
});
const { startSystem } = await import("../e2e/system.ts");
const sys = await startSystem();

async function post(path: string, body: unknown) {
  const res = await fetch(`${sys.gatewayUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { data: unknown } };
}

try {
  const wallets = Array.from({ length: users }, () => Wallet.createRandom());
  for (const [i, wallet] of wallets.entries()) {
    const mailAddress = `bench${i}@example.org`;
    const res = await post("/Authentication/Register", {
      name: "Bench",
      surname: "User",
      username: `bench_${i}`,
      mailAddress,
      signedMessage: await wallet.signMessage("REGISTER"),
    });
    if (res.status !== 201) throw new Error(`register: ${res.status} ${JSON.stringify(res.body)}`);
    const mail = await sys.mailbox.next(mailAddress);
    const link = /https?:\/\/\S+verify-email\?[^\s"<>]+/.exec(mail.text ?? "")?.[0] ?? "";
    const verified = await fetch(link.replaceAll("&amp;", "&"), { headers: { accept: "application/json" } });
    if (!verified.ok) throw new Error(`verify: ${verified.status}`);
  }

  const latencies: number[] = [];
  let failures = 0;
  const until = Date.now() + durationMs;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      for (let i = worker; Date.now() < until; i += concurrency) {
        const wallet = wallets[i % wallets.length] as (typeof wallets)[number];
        const t0 = performance.now();
        const nonce = await fetch(`${sys.gatewayUrl}/Authentication/GetNonce/${wallet.address}`).then(
          (r) => r.json() as Promise<{ data: number }>,
        );
        const login = await post("/Authentication/Login", {
          address: wallet.address,
          signedMessage: await wallet.signMessage(`LOGIN: ${nonce.data}`),
        });
        if (login.status === 200) latencies.push(performance.now() - t0);
        else failures++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
  console.log(
    `\nsign-in (GetNonce → sign → Login) through the gateway, ${concurrency} concurrent clients, ${users} users\n`,
  );
  console.log(`logins/s   ${(latencies.length / seconds).toFixed(1)}`);
  console.log(`p50 ms     ${pct(50).toFixed(1)}`);
  console.log(`p99 ms     ${pct(99).toFixed(1)}`);
  console.log(`logins     ${latencies.length} in ${seconds.toFixed(1)} s, ${failures} failed`);
} finally {
  await sys.stop();
}
