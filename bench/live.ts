/**
 * `pnpm bench:live`: GET /events on the whole system (every service a process, default configuration
 * except the rate limits). Prints figures, asserts no goals:
 *
 * 1. idle streams one gateway holds: its RSS before and after opening `--idle` anonymous streams, per
 *    stream (goal ≤ 20 KB);
 * 2. from a write's answer to its message on `--subscribers` streams of the project's owner: p50/p99
 *    (goal p99 ≤ 250 ms), beside the same write's own latency without subscribers and with them (ratio).
 *
 *   pnpm bench:live [-- --idle 5000 --subscribers 1000 --writes 30]
 */
import http from "node:http";
import { parseArgs } from "node:util";
import { Wallet } from "ethers";
import { memoryOf, servicePid } from "./lib/processes.ts";
import { liftRateLimits } from "./lib/services.ts";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    idle: { type: "string", default: "5000" },
    subscribers: { type: "string", default: "1000" },
    writes: { type: "string", default: "30" },
  },
});
const idleCount = Number(values.idle);
const subscriberCount = Number(values.subscribers);
const writes = Number(values.writes);

liftRateLimits();
const { startSystem } = await import("../e2e/system.ts");
const sys = await startSystem();
const agent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

async function api(method: string, path: string, token?: string, body?: unknown) {
  const res = await fetch(`${sys.gatewayUrl}${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json()) as { data: unknown; message: string };
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${json.message}`);
  return json.data;
}

/** A stream kept open; `onChunk` sees every chunk as it arrives. */
function openStream(token: string | null, onChunk: (chunk: Buffer) => void): Promise<http.ClientRequest> {
  return new Promise((resolve, reject) => {
    const request = http.get(
      `${sys.gatewayUrl}/events`,
      { agent, headers: token ? { authorization: `Bearer ${token}` } : {} },
      (response) => {
        if (response.statusCode !== 200) reject(new Error(`stream: ${response.statusCode}`));
        response.on("data", onChunk);
        response.once("data", () => resolve(request));
      },
    );
    request.on("error", reject);
  });
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const ms = (n: number) => `${n.toFixed(1)} ms`;
const settle = () => new Promise((r) => setTimeout(r, 2000));

try {
  // The owner of one project: writes are UpdateMarkDown on it; its streams see them.
  const wallet = Wallet.createRandom();
  const mailAddress = "live-bench@example.org";
  await api("POST", "/Authentication/Register", undefined, {
    name: "Bench",
    surname: "Live",
    username: "live_bench",
    mailAddress,
    signedMessage: await wallet.signMessage("REGISTER"),
  });
  const mail = await sys.mailbox.next(mailAddress);
  const link = /https?:\/\/\S+verify-email\?[^\s"<>]+/.exec(mail.text ?? "")?.[0] ?? "";
  await fetch(link.replaceAll("&amp;", "&"), { headers: { accept: "application/json" } });
  const nonce = await api("GET", `/Authentication/GetNonce/${wallet.address}`);
  const token = (await api("POST", "/Authentication/Login", undefined, {
    address: wallet.address,
    signedMessage: await wallet.signMessage(`LOGIN: ${nonce}`),
  })) as string;
  const project = (await api("POST", "/Project/Add", token, {
    fileHex: Buffer.from(`live bench ${Date.now()}`).toString("hex"),
    projectName: `Live bench ${Date.now()}`,
  })) as { projectID: number };

  const gateway = servicePid("gateway");
  const write = async (marker: string) => {
    const started = performance.now();
    await api("PUT", `/Project/UpdateMarkDown/${project.projectID}/${marker}`, token);
    return { answeredAt: performance.now(), latency: performance.now() - started };
  };
  const writeLatencies = async (label: string) => {
    const latencies: number[] = [];
    for (let i = 0; i < writes; i++) latencies.push((await write(`${label}-${i}`)).latency);
    return latencies.sort((a, b) => a - b);
  };

  // 1. Idle streams.
  await settle();
  const before = memoryOf(gateway).rss;
  const idle: http.ClientRequest[] = [];
  for (let i = 0; i < idleCount; i += 200) {
    const batch = Math.min(200, idleCount - i);
    idle.push(...(await Promise.all(Array.from({ length: batch }, () => openStream(null, () => {})))));
  }
  await settle();
  const after = memoryOf(gateway).rss;
  const perStream = (after - before) / idleCount;
  for (const r of idle) r.destroy();
  await settle();

  // 2. Latency from a write's answer to its message, with the write's own latency as the baseline.
  const alone = await writeLatencies("alone");
  const arrivals = new Map<string, number[]>();
  const streams = await Promise.all(
    Array.from({ length: subscriberCount }, () =>
      openStream(token, (chunk) => {
        const at = performance.now();
        const match = /"markDown":"(w-\d+)"/.exec(chunk.toString("utf8"));
        if (match) arrivals.get(match[1] as string)?.push(at);
      }),
    ),
  );
  await settle();
  const delays: number[] = [];
  const loaded: number[] = [];
  for (let i = 0; i < writes; i++) {
    const marker = `w-${i}`;
    arrivals.set(marker, []);
    const { answeredAt, latency } = await write(marker);
    loaded.push(latency);
    const deadline = Date.now() + 5000;
    while ((arrivals.get(marker)?.length ?? 0) < subscriberCount && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 5));
    }
    for (const at of arrivals.get(marker) ?? []) delays.push(Math.max(0, at - answeredAt));
  }
  for (const s of streams) s.destroy();
  delays.sort((a, b) => a - b);
  loaded.sort((a, b) => a - b);
  const received = delays.length / (writes * subscriberCount);

  console.log(`\nbench:live (${new Date().toISOString()})`);
  console.log(
    `idle streams: ${idleCount} on one gateway, RSS ${(before / 2 ** 20).toFixed(0)} → ${(after / 2 ** 20).toFixed(0)} MiB`,
  );
  console.log(`  per stream: ${(perStream / 1024).toFixed(1)} KB (goal ≤ 20 KB)`);
  console.log(
    `write → message at ${subscriberCount} subscribers, ${writes} writes (${(received * 100).toFixed(1)}% received):`,
  );
  console.log(`  p50 ${ms(quantile(delays, 0.5))}, p99 ${ms(quantile(delays, 0.99))} (goal p99 ≤ 250 ms)`);
  console.log(
    `the write's own latency (median): alone ${ms(quantile(alone, 0.5))}, with subscribers ${ms(quantile(loaded, 0.5))}`,
  );
  console.log(
    `  ratio with/without subscribers: ${(quantile(loaded, 0.5) / quantile(alone, 0.5)).toFixed(2)}×`,
  );
} finally {
  agent.destroy();
  await sys.stop();
}
