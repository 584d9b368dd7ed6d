import { randomBytes } from "node:crypto";
import { createKuboIpfs } from "@fundraise/ipfs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../scripts/lib/processes.ts";
import { createClient } from "./client.ts";
import { catPath, expectEnvelope, identityOf, isPinned, type ProjectDto } from "./projects-kit.ts";
import { type System, startSystem } from "./system.ts";

// Content the gateway pinned that no project took, on a system of its own (services as processes; IPFS:
// the Kubo-RPC stand-in of packages/ipfs-node, not Kubo): refused Adds, a gateway killed between its pinned
// add and the projects write, the node's GC during Adds. Only a release the projects service grants
// unpins: the gateway's for its refused write at once, else the storage service's sweep of pins no row and
// no project accounts for, once they were seen for the grace period.
const MiB = 1024 * 1024;
// Seconds, not the default 15 minutes: a shorter grace only makes writes under way pin again (ADR 0027).
const GRACE_MS = 3_000;
/** Long enough for the grace period, a round that finds the projects service back, and a loaded machine. */
const SWEPT_WITHIN_MS = GRACE_MS + 90_000;
let sys: System;
const client = createClient(() => sys);
let token: string;
let projectsPid: number;

beforeAll(async () => {
  sys = await startSystem({
    services: ["users", "auth", "storage", "projects", "gateway"],
    // One proposer adds more than the 5 waiting projects a proposer may have (not what this file tests).
    env: { REVIEW_QUEUE_PER_PROPOSER: "100" },
    serviceEnv: {
      storage: {
        ORPHAN_GRACE_MS: String(GRACE_MS),
        RECONCILE_INTERVAL_MS: "1000",
        ADOPT_UNRECORDED_PINS: "true",
      },
    },
  });
  projectsPid = sys.pids.projects as number;
  const user = await client.signedUpUser();
  token = await client.tokenOf(user.wallet);
});
afterAll(() => sys?.stop());

const ipfsUrl = () => sys.ipfsUrl as string;

const add = (name: string, file: Buffer, gateway?: string) =>
  client.api("POST", "/Project/Add", {
    token,
    body: { projectName: name, projectDescription: "content faults", fileHex: file.toString("hex") },
    ...(gateway ? { gateway } : {}),
  });

const newFile = (label: string, bytes = 2048) =>
  Buffer.concat([Buffer.from(`%PDF-1.4 ${label} `), randomBytes(bytes)]);

const ownProjectNames = async () =>
  ((await client.api("GET", "/Project/GetAllPermissioned/false", { token })).body.data as ProjectDto[]).map(
    (p) => p.projectName,
  );

/** `count` jobs, at most `width` at a time; their results in order. */
async function inParallel<T>(count: number, width: number, job: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) results[i] = await job(i);
  };
  await Promise.all(Array.from({ length: width }, worker));
  return results;
}

describe("content pinned that no project took: released by the gateway, else swept by storage", () => {
  it("refused Adds leave no pin after the grace period; the content of an existing project stays", async () => {
    const kept = newFile("kept");
    const keptName = `kept ${randomBytes(3).toString("hex")}`;
    expectEnvelope(await add(keptName, kept), 201, "the existing project");
    const keptCid = (await identityOf({ file: kept })).cid;

    // Refused for a taken name, each with a new file: the gateway pinned each, then released it.
    const refused = Array.from({ length: 5 }, (_, i) => newFile(`refused ${i}`));
    for (const file of refused) {
      const answer = await add(keptName, file);
      expectEnvelope(answer, 409, "a taken name");
      expect(answer.headers.get("x-error-code")).toBe("PROJECT_NAME_TAKEN");
    }
    // Refused with the existing project's file: its release answers "held", nothing is unpinned.
    const same = await add(`same file ${randomBytes(3).toString("hex")}`, kept);
    expectEnvelope(same, 409, "the same file");
    expect(same.headers.get("x-error-code")).toBe("PROJECT_FILE_TAKEN");

    // A witness of the sweep: a project-shaped directory pinned now that no row and no project accounts
    // for. Once it is gone, a round ran with everything above older than the grace period.
    const node = createKuboIpfs({ url: ipfsUrl(), timeoutMs: 30_000, readTimeoutMs: 30_000 });
    const witness = (
      await node.addDirectory([{ name: "whitepaper", content: newFile("witness") }], { pin: true })
    ).toString();
    expect(await isPinned(ipfsUrl(), witness)).toBe(true);

    const refusedCids = await Promise.all(refused.map(async (file) => (await identityOf({ file })).cid));
    const pinned = (cids: string[]) =>
      Promise.all(cids.map(async (cid) => (await isPinned(ipfsUrl(), cid)) && cid)).then((c) =>
        c.filter(Boolean),
      );
    await expect.poll(() => pinned(refusedCids), { timeout: SWEPT_WITHIN_MS, interval: 500 }).toEqual([]);
    await expect
      .poll(() => isPinned(ipfsUrl(), witness), { timeout: SWEPT_WITHIN_MS, interval: 500 })
      .toBe(false);
    expect(await isPinned(ipfsUrl(), keptCid), "the existing project's content").toBe(true);
    expect(await ownProjectNames()).toContain(keptName);
  }, 300_000);

  it("a gateway killed (kill -9) between its pinned add and the projects write: no project, the pin swept", async () => {
    const port = await freePort();
    const doomed = `http://localhost:${port}`;
    const doomedPid = await sys.startService("gateway", { PORT: String(port) });
    // The window: the projects service frozen (SIGSTOP), the Add's call waits in its queue after the
    // gateway pinned the content; the queue lives as long as the frozen process's connection (until the
    // broker misses its heartbeats, tens of seconds). Killed instead, its queue would go at once and the
    // call would be refused at once (unroutable: a 503, and the gateway releasing its content).
    process.kill(projectsPid, "SIGSTOP");
    const file = newFile("gateway killed", 64 * 1024);
    const name = `gateway killed ${randomBytes(3).toString("hex")}`;
    const { cid } = await identityOf({ file });
    const sent = add(name, file, doomed).catch(() => null);
    try {
      await expect.poll(() => isPinned(ipfsUrl(), cid), { timeout: 30_000, interval: 50 }).toBe(true);
      process.kill(doomedPid, "SIGKILL");
      expect(await sent, "no answer from a killed gateway").toBeNull();
    } finally {
      // Killed while frozen: its queue goes with its connection, and the Add's call with it (never run).
      process.kill(projectsPid, "SIGKILL");
    }
    projectsPid = await sys.startService("projects");

    expect(await ownProjectNames()).not.toContain(name);
    await expect
      .poll(() => isPinned(ipfsUrl(), cid), { timeout: SWEPT_WITHIN_MS, interval: 500 })
      .toBe(false);
    expect(await ownProjectNames()).not.toContain(name);
    // The name is free: nothing of the killed Add was written.
    expectEnvelope(await add(name, file), 201, "the same Add again");
    expect(await isPinned(ipfsUrl(), cid)).toBe(true);
  }, 330_000);

  it("the node's GC during Adds: no project loses content", async () => {
    const files = Array.from({ length: 20 }, (_, i) => randomBytes(MiB + Math.floor((i / 20) * MiB)));
    const names = files.map((_, i) => `gc ${i} ${randomBytes(3).toString("hex")}`);
    let adding = true;
    let collections = 0;
    const gc = async () => {
      const res = await fetch(`${ipfsUrl()}/api/v0/repo/gc`, { method: "POST" });
      const body = await res.text();
      expect(res.status, body).toBe(200);
      collections++;
    };
    const collecting = (async () => {
      while (adding) await gc();
    })();
    // Awaited below; a failed GC must not count as an unhandled rejection meanwhile.
    collecting.catch(() => undefined);
    let answers: Awaited<ReturnType<typeof add>>[];
    try {
      answers = await inParallel(files.length, 4, (i) => add(names[i] as string, files[i] as Buffer));
    } finally {
      adding = false;
      await collecting;
    }
    expect(collections).toBeGreaterThan(0);
    // And once more with every Add answered: what a project holds is pinned, so it survives any GC.
    await gc();
    for (const [i, answer] of answers.entries()) {
      expectEnvelope(answer, 201, names[i]);
      const { cid, fileHash } = await identityOf({ file: files[i] as Buffer });
      expect((answer.body.data as ProjectDto).fileHash).toBe(fileHash);
      expect(await isPinned(ipfsUrl(), cid), names[i]).toBe(true);
      expect((await catPath(ipfsUrl(), `/ipfs/${cid}/whitepaper`)).equals(files[i] as Buffer), names[i]).toBe(
        true,
      );
    }
  });
});
