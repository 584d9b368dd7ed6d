/**
 * `pnpm bench:upload`: the content path on the whole system as separate processes (users, auth, storage,
 * projects, gateway, and the IPFS stand-in of `packages/ipfs-node` in a process of its own, as Kubo is in
 * production), default configuration except the rate limits. Prints figures, asserts no goals:
 *
 * 1. a 10 MiB Add through the gateway (POST /Project/Add, the file as hex, a signed-in Base user: the
 *    gateway adds it to the node pinned, projects writes the row; storage records the pin from the event,
 *    off the request's path, ADR 0027) against a direct pinned `add`
 *    of as many new bytes to the same node (kubo-rpc-client, Kubo's defaults): medians, ratio;
 * 2. the CPU each process of the path spends per Add (from /proc), and the peak RSS of the gateway and
 *    storage during those uploads (VmHWM, reset before them);
 * 3. the same for a 1 KiB file: what an Add costs beyond moving its bytes (the write's checks, one
 *    transaction, two hops), which the 10 MiB ratio carries on top of the add itself, and its ratio;
 *
 *   pnpm bench:upload [-- --runs 3]
 */
import { randomBytes } from "node:crypto";
import { availableParallelism } from "node:os";
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { createKuboIpfs } from "@fundraise/ipfs";
import { createTestDatabase } from "@fundraise/service-kit/testing";
import { Wallet } from "ethers";
import { cpuMs, pidsOf } from "./lib/cpu.ts";
import {
  closeConnections,
  memoryOf,
  postBuffer,
  resetPeak,
  servicePid,
  startIpfsProcess,
} from "./lib/processes.ts";
import { liftRateLimits } from "./lib/services.ts";
import { median } from "./lib/stats.ts";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    runs: { type: "string", default: "3" },
  },
});
const runs = Number(values.runs);
const MiB = 1024 * 1024;
const PAYLOAD = 10 * MiB;
const SMALL = 1024;
const WARM_UPS = 3;

liftRateLimits({ REVIEW_QUEUE_PER_PROPOSER: "100000", REVIEW_QUEUE_MAX: "100000" });
const { startSystem } = await import("../e2e/system.ts");

/** A database of its own, dropped at the end; the system's services all use it. */
const db = await createTestDatabase("bench_upload");
const ipfsNode = await startIpfsProcess();
const sys = await startSystem({ env: { DATABASE_URL: db.url }, ipfsUrl: ipfsNode.url }).catch(
  async (error: unknown) => {
    await Promise.all([db.dispose(), ipfsNode.stop()]);
    throw error;
  },
);

const mb = (bytes: number) => bytes / MiB;

async function post(path: string, body: unknown, token?: string) {
  const res = await fetch(`${sys.gatewayUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { data: unknown; message: string | null } };
}

/** A signed-up, e-mail-verified, signed-in user with no chain role (Base): may Add. */
async function signedInUser(): Promise<string> {
  const wallet = Wallet.createRandom();
  const mailAddress = "bench-upload@example.org";
  const reg = await post("/Authentication/Register", {
    name: "Bench",
    surname: "Upload",
    username: "bench_upload",
    mailAddress,
    signedMessage: await wallet.signMessage("REGISTER"),
  });
  if (reg.status !== 201) throw new Error(`register: ${reg.status} ${JSON.stringify(reg.body)}`);
  const mail = await sys.mailbox.next(mailAddress);
  const link = /https?:\/\/\S+verify-email\?[^\s"<>]+/.exec(mail.text ?? "")?.[0] ?? "";
  const verified = await fetch(link.replaceAll("&amp;", "&"), { headers: { accept: "application/json" } });
  if (!verified.ok) throw new Error(`verify: ${verified.status}`);
  const nonce = (await fetch(`${sys.gatewayUrl}/Authentication/GetNonce/${wallet.address}`).then((r) =>
    r.json(),
  )) as { data: number };
  const login = await post("/Authentication/Login", {
    address: wallet.address,
    signedMessage: await wallet.signMessage(`LOGIN: ${nonce.data}`),
  });
  if (login.status !== 200) throw new Error(`login: ${login.status} ${JSON.stringify(login.body)}`);
  return login.body.data as string;
}

try {
  const token = await signedInUser();
  const ipfs = createKuboIpfs({ url: sys.ipfsUrl as string, timeoutMs: 120_000, readTimeoutMs: 120_000 });
  const pids = { gateway: servicePid("gateway"), storage: servicePid("storage") };

  // CPU per Add of each process on the path (read around the request only, like the clock).
  const cpuOf = {
    "client (this)": [process.pid],
    "IPFS stand-in": [ipfsNode.pid],
    gateway: [pids.gateway],
    storage: [pids.storage],
    projects: [servicePid("projects")],
    RabbitMQ: pidsOf("beam.smp"),
  };
  const addCpuMs: Record<string, number[]> = Object.fromEntries(Object.keys(cpuOf).map((name) => [name, []]));
  const cpuNow = () =>
    Object.fromEntries(
      Object.entries(cpuOf).map(([name, list]) => [name, list.reduce((t, p) => t + cpuMs(p), 0)]),
    );

  // Each timed add starts on a quiet system: this process's garbage collected (its 20 MB hex strings and
  // the direct add's multipart copies) and the services' own collections after the previous add done, so
  // neither side of the ratio pays for the other's leftovers on the same two cores.
  setFlagsFromString("--expose-gc");
  const collect = runInNewContext("gc") as () => void;
  const settle = async () => {
    collect();
    await new Promise((resolve) => setTimeout(resolve, 300));
  };

  let added = 0;
  async function viaGateway(file: Buffer): Promise<number> {
    // The body is built and encoded before the clock starts, and sent by node:http as one buffer: the
    // client's own encoding and fetch's copies are not the system's time, yet share its two cores.
    const body = Buffer.from(
      JSON.stringify({
        projectName: `bench upload ${++added}`,
        projectDescription: "bench",
        fileHex: file.toString("hex"),
      }),
    );
    await settle();
    const cpu0 = cpuNow();
    const t0 = performance.now();
    const res = await postBuffer(`${sys.gatewayUrl}/Project/Add`, body, token);
    const ms = performance.now() - t0;
    const cpu1 = cpuNow();
    for (const name of Object.keys(cpu0)) addCpuMs[name]?.push((cpu1[name] ?? 0) - (cpu0[name] ?? 0));
    if (res.status !== 201) throw new Error(`Add: ${res.status} ${res.body.message}`);
    return ms;
  }
  const directCpuMs: Record<string, number[]> = { "client (this)": [], "IPFS stand-in": [] };
  async function direct(file: Buffer): Promise<number> {
    await settle();
    const cpu0 = cpuNow();
    const t0 = performance.now();
    await ipfs.addDirectory([{ name: "whitepaper", content: file }], { pin: true });
    const ms = performance.now() - t0;
    const cpu1 = cpuNow();
    for (const name of Object.keys(directCpuMs))
      directCpuMs[name]?.push((cpu1[name] ?? 0) - (cpu0[name] ?? 0));
    return ms;
  }

  // Three warm-ups of each (JIT: the first Adds of a fresh system take 1.5–2× the tenth, the commit path's
  // code most), then the measured runs, the two sides in turn. Each
  // add gets bytes of its own: a node skips the writes of blocks it holds already, so a direct add of the
  // bytes the Add had just stored would measure a cheaper add than any new file costs.
  for (let warm = 0; warm < WARM_UPS; warm++) {
    await viaGateway(randomBytes(PAYLOAD));
    await direct(randomBytes(PAYLOAD));
  }
  for (const list of [...Object.values(addCpuMs), ...Object.values(directCpuMs)]) list.length = 0; // the warm-up's
  const idle = { gateway: memoryOf(pids.gateway).rss, storage: memoryOf(pids.storage).rss };
  const reset = resetPeak(pids.gateway) && resetPeak(pids.storage);
  const gatewayMs: number[] = [];
  const directMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    if (i % 2 === 1) directMs.push(await direct(randomBytes(PAYLOAD)));
    gatewayMs.push(await viaGateway(randomBytes(PAYLOAD)));
    if (i % 2 === 0) directMs.push(await direct(randomBytes(PAYLOAD)));
  }
  const peak = { gateway: memoryOf(pids.gateway).hwm, storage: memoryOf(pids.storage).hwm };

  const ratio = median(gatewayMs) / median(directMs);
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(", ");
  console.log(`\n10 MiB whitepaper (${PAYLOAD} bytes), ${runs} runs each after ${WARM_UPS} warm-ups\n`);
  console.log(
    `POST /Project/Add through the gateway   median ${median(gatewayMs).toFixed(0).padStart(6)} ms   (${fmt(gatewayMs)})`,
  );
  console.log(
    `direct add to the same IPFS node         median ${median(directMs).toFixed(0).padStart(6)} ms   (${fmt(directMs)})`,
  );
  console.log(`ratio (gateway / direct)                 ${ratio.toFixed(2)}×   (goal ≤ 1.5×)`);
  // Means: /proc counts CPU in ticks of 10 ms, so a median moves in steps of 10 and a mean over the runs
  // is the finer figure.
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const cpuLine = (perProcess: Record<string, number[]>) =>
    `${Object.entries(perProcess)
      .map(([name, list]) => `${name} ${mean(list).toFixed(0)}`)
      .join(", ")}; all ${Object.values(perProcess)
      .reduce((total, list) => total + mean(list), 0)
      .toFixed(0)}`;
  console.log(`\nCPU per Add (mean ms): ${cpuLine(addCpuMs)}`);
  console.log(`CPU per direct add (mean ms): ${cpuLine(directCpuMs)}`);
  // What bounds the ratio on this machine: when both sides keep every core busy, the Add cannot take less
  // than its CPU over the direct add's, however well its stages overlap (docs/adr/0006-measuring-performance.md).
  const allCpu = (perProcess: Record<string, number[]>) =>
    Object.values(perProcess).reduce((total, list) => total + mean(list), 0);
  const cores = (cpu: number, wall: number) => (cpu / wall).toFixed(1);
  console.log(
    `cores busy (CPU / wall, means): Add ${cores(allCpu(addCpuMs), mean(gatewayMs))} of ${availableParallelism()}, ` +
      `direct add ${cores(allCpu(directCpuMs), mean(directMs))}; ` +
      `CPU ratio (Add / direct) ${(allCpu(addCpuMs) / allCpu(directCpuMs)).toFixed(2)}×`,
  );
  console.log(
    `\npeak RSS during the uploads${reset ? "" : " (VmHWM could not be reset: peak since start-up)"}\n`,
  );
  for (const name of ["gateway", "storage"] as const) {
    console.log(
      `${name.padEnd(8)} idle ${mb(idle[name]).toFixed(0).padStart(5)} MB   peak ${mb(peak[name]).toFixed(0).padStart(5)} MB` +
        `   peak ${(peak[name] / PAYLOAD).toFixed(1)}× the payload, above idle ${((peak[name] - idle[name]) / PAYLOAD).toFixed(1)}×   (goal ≤ 3×)`,
    );
  }

  // 3. What an Add costs beyond moving its bytes: the same turns with a 1 KiB file.
  for (const list of [...Object.values(addCpuMs), ...Object.values(directCpuMs)]) list.length = 0;
  const smallAdd: number[] = [];
  const smallDirect: number[] = [];
  for (let i = -WARM_UPS; i < Math.max(runs, 5); i++) {
    const add = await viaGateway(randomBytes(SMALL));
    const plain = await direct(randomBytes(SMALL));
    if (i < 0) continue;
    smallAdd.push(add);
    smallDirect.push(plain);
  }
  const fixed = median(smallAdd) - median(smallDirect);
  console.log(
    `
1 KiB whitepaper, ${smallAdd.length} runs each: Add median ${median(smallAdd).toFixed(1)} ms (${fmt(smallAdd)}), ` +
      `direct add ${median(smallDirect).toFixed(1)} ms (${fmt(smallDirect)}); an Add's cost beyond its bytes ≈ ${fixed.toFixed(0)} ms, ` +
      `${((100 * fixed) / median(gatewayMs)).toFixed(0)} % of the 10 MiB Add's median`,
  );
  console.log(`CPU per 1 KiB Add (mean ms, warm-ups included): ${cpuLine(addCpuMs)}`);
  console.log(
    `ratio (gateway / direct, 1 KiB)          ${(median(smallAdd) / median(smallDirect)).toFixed(2)}×   (goal ≤ 2×)`,
  );
} finally {
  closeConnections();
  await sys.stop();
  await Promise.all([db.dispose(), ipfsNode.stop()]);
}
