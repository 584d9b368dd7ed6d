/**
 * `pnpm bench:reads`: the reads a polling client repeats, on the whole system as separate processes
 * (default configuration except the rate limits). Prints figures, asserts no goals: anonymous
 * `GET /Project/Get/All` with 1,000 visible projects (plain, gzip, 304) beside `GET /user/learnusercount`
 * in the same run, and the CPU per request of the serving processes and of this load
 * generator (on two cores they share, req/s of a large answer is the client's as much as the server's).
 *
 *   pnpm bench:reads [-- --connections 50 --duration 5 --rounds 3]
 */

import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { cidOfDigestHex } from "@fundraise/ipfs-node";
import { createTestDatabase } from "@fundraise/service-kit/testing";
import { Wallet } from "ethers";
import pg from "pg";
import { cpuMs, pidsOf } from "./lib/cpu.ts";
import { HttpConnection } from "./lib/http-connection.ts";
import { servicePid } from "./lib/processes.ts";
import { liftRateLimits } from "./lib/services.ts";
import { median } from "./lib/stats.ts";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    connections: { type: "string", default: "50" },
    duration: { type: "string", default: "5" },
    rounds: { type: "string", default: "3" },
  },
});
const connections = Number(values.connections);
const duration = Number(values.duration);
const rounds = Math.max(1, Number(values.rounds));
const PROJECTS = 1000;

liftRateLimits();
const { startSystem } = await import("../e2e/system.ts");

/** Our own database, so this script can write project rows; the system's services all use it. */
const db = await createTestDatabase("bench_reads");
const sys = await startSystem({ env: { DATABASE_URL: db.url } }).catch(async (error: unknown) => {
  await db.dispose();
  throw error;
});

/**
 * `connections` kept-alive connections, each sending its next request when the last one answered, for
 * `seconds`: the answers, their latencies, and those with another status than `expected`.
 */
async function drive(url: URL, headers: Record<string, string>, expected: number, seconds: number) {
  const request = HttpConnection.request("GET", url.host, url.pathname, undefined, headers);
  const open = await Promise.all(
    Array.from({ length: connections }, () => HttpConnection.open(url.hostname, Number(url.port))),
  );
  const latencies: number[] = [];
  let bad = 0;
  const until = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(
    open.map(async (connection) => {
      while (performance.now() < until) {
        const sent = performance.now();
        const answer = await connection.send(request).catch(() => undefined);
        if (answer?.status === expected) latencies.push(performance.now() - sent);
        else bad++;
        if (answer === undefined) return;
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  for (const connection of open) connection.close();
  return { latencies, bad, elapsed };
}

/**
 * req/s and latency under load (a conditional GET's 304s count as answers), and CPU per request. The
 * load comes from bench/lib/http-connection.ts, not autocannon: autocannon's parser (http-parser-js)
 * turned every chunk of a large answer into a string, about 0.8 ms of this process's CPU per 45 KB
 * answer, which on two shared cores measured the load generator more than the gateway.
 */
async function load(path: string, headers: Record<string, string> = {}, expected = 200) {
  const url = new URL(path, sys.gatewayUrl);
  await drive(url, headers, expected, 2);
  const serving = [servicePid("gateway"), servicePid("projects"), servicePid("users"), ...pidsOf("beam.smp")];
  const serverCpu = () => serving.reduce((sum, pid) => sum + cpuMs(pid), 0);
  const [server0, client0] = [serverCpu(), cpuMs(process.pid)];
  const { latencies, bad, elapsed } = await drive(url, headers, expected, duration);
  const requests = latencies.length + bad || 1;
  const sorted = latencies.sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return {
    rps: latencies.length / elapsed,
    p50: at(0.5),
    p99: at(0.99),
    bad,
    serverUs: ((serverCpu() - server0) * 1000) / requests,
    clientUs: ((cpuMs(process.pid) - client0) * 1000) / requests,
  };
}

try {
  // 1,000 projects anonymous callers see: viewer-accepted and Approved.
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const hashes = Array.from({ length: PROJECTS }, () =>
      Buffer.from(crypto.getRandomValues(new Uint8Array(32)))
        .toString("hex")
        .toUpperCase(),
    );
    await client.query(
      `insert into projects.project
         (name, description, file_hash, cid, status, viewer_accepted, proposer_address, created_at, updated_at)
       select 'bench project ' || n, 'a project of the benchmark', h, c, 'Approved', true, $3, now(), now()
       from unnest($1::text[], $2::text[]) with ordinality as t(h, c, n)`,
      [hashes, hashes.map((h) => cidOfDigestHex(h).toString()), Wallet.createRandom().address],
    );
  } finally {
    await client.end();
  }
  const listUrl = "/Project/Get/All";
  const answer = await fetch(new URL(listUrl, sys.gatewayUrl));
  const plain = Buffer.from(await answer.arrayBuffer());
  const etag = answer.headers.get("etag") ?? "";
  const kinds = {
    "GET /Project/Get/All": () => load(listUrl),
    "  the same, gzip": () => load(listUrl, { "accept-encoding": "gzip" }),
    "  the same, 304": () => load(listUrl, { "if-none-match": etag }, 304),
    "GET /user/learnusercount": () => load("/user/learnusercount"),
  };
  type Figures = Awaited<ReturnType<typeof load>>;
  const measured = new Map<string, Figures[]>(Object.keys(kinds).map((name) => [name, []]));
  // Rounds in turn, the order reversed every other round: the machine's other load drifts, and each
  // round's ratios compare loads measured next to each other.
  for (let round = 0; round < rounds; round++) {
    const order = Object.entries(kinds);
    if (round % 2 === 1) order.reverse();
    for (const [name, run] of order) measured.get(name)?.push(await run());
  }

  const kib = (bytes: number) => (bytes / 1024).toFixed(0);
  console.log(
    `\nanonymous GET, ${connections} connections, ${duration} s each, ${rounds} rounds ` +
      `(Get/All: ${PROJECTS} projects, ${kib(plain.length)} KiB, gzip ${kib(gzipSync(plain).length)} KiB)\n`,
  );
  console.log(
    `${"medians of the rounds".padEnd(24)} ${"req/s".padStart(8)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)} ` +
      `${"non-2xx/errors".padStart(15)}${"server µs/req".padStart(15)} ${"client µs/req".padStart(14)}`,
  );
  const of = (name: string) => measured.get(name) ?? [];
  const med = (name: string, key: keyof Figures) => median(of(name).map((f) => f[key]));
  for (const name of Object.keys(kinds)) {
    console.log(
      `${name.padEnd(24)} ${med(name, "rps").toFixed(0).padStart(8)} ${med(name, "p50").toFixed(1).padStart(8)} ` +
        `${med(name, "p99").toFixed(1).padStart(8)} ${String(of(name).reduce((t, f) => t + f.bad, 0)).padStart(15)}` +
        `${med(name, "serverUs").toFixed(0).padStart(15)} ${med(name, "clientUs").toFixed(0).padStart(14)}`,
    );
  }
  const base = "GET /user/learnusercount";
  const ratio = (name: string, key: "rps" | "serverUs") => {
    const perRound = of(name).map((f, round) => f[key] / ((of(base)[round] as Figures)[key] || 1));
    return `${median(perRound).toFixed(2)}× (${perRound.map((r) => r.toFixed(2)).join(", ")})`;
  };
  console.log("\nagainst learnusercount, median of the rounds' ratios (goal: req/s ≥ 0.5×, 304 ≥ 1×)");
  for (const name of Object.keys(kinds).filter((n) => n !== base)) {
    console.log(
      `${name.trim().padEnd(24)} req/s ${ratio(name, "rps")}, server CPU per request ${ratio(name, "serverUs")}`,
    );
  }
} finally {
  await sys.stop();
  await db.dispose();
}
