import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "./client.ts";
import { expectEnvelope, identityOf, isPinned, type ProjectDto } from "./projects-kit.ts";
import { type System, startSystem } from "./system.ts";

// An Add's content added to IPFS, pinned, by the gateway while the body arrives; the projects service
// commits the project and emits `projects.content.taken`, from which the storage service records its pin
// inventory after the fact. On a system of its own (services as processes; IPFS: the Kubo-RPC stand-in of
// packages/ipfs-node, not Kubo): the storage service down, a client gone mid-body, several storage
// instances, IPFS stopped.
const MiB = 1024 * 1024;
let sys: System;
let db: pg.Pool;
const client = createClient(() => sys);
let token: string;

beforeAll(async () => {
  sys = await startSystem({
    services: ["users", "auth", "storage", "projects", "gateway"],
    // One proposer adds more than the 5 waiting projects a proposer may have (not what this file tests).
    env: { REVIEW_QUEUE_PER_PROPOSER: "100" },
  });
  db = new pg.Pool({ connectionString: sys.databaseUrl, max: 1 });
  const user = await client.signedUpUser();
  token = await client.tokenOf(user.wallet);
});
afterAll(async () => {
  await db?.end();
  await sys?.stop();
});

const add = (name: string, file: Buffer) =>
  client.api("POST", "/Project/Add", {
    token,
    body: { projectName: name, projectDescription: "streamed", fileHex: file.toString("hex") },
  });

const ownProjectNames = async () =>
  ((await client.api("GET", "/Project/GetAllPermissioned/false", { token })).body.data as ProjectDto[]).map(
    (p) => p.projectName,
  );

/** How many live rows (`unpinned_at` null) the storage service's inventory has for each of these hashes. */
async function liveRows(fileHashes: string[]): Promise<number[]> {
  const { rows } = await db.query<{ hash: string; rows: number }>(
    `SELECT lower(file_hash) AS hash, count(*)::int AS rows FROM storage.pin
      WHERE unpinned_at IS NULL AND lower(file_hash) = ANY($1) GROUP BY 1`,
    [fileHashes.map((h) => h.toLowerCase())],
  );
  const counts = new Map(rows.map((r) => [r.hash, r.rows]));
  return fileHashes.map((h) => counts.get(h.toLowerCase()) ?? 0);
}

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

describe("an Add's content: pinned by the gateway, committed by projects, recorded by storage afterwards", () => {
  it("the storage service killed during 50 Adds: all are created and pinned; once back, it records them all", async () => {
    process.kill(sys.pids.storage as number, "SIGKILL");
    const files = Array.from({ length: 50 }, (_, i) =>
      Buffer.from(`%PDF-1.4 storage away ${i} ${randomBytes(512).toString("hex")}`),
    );
    const names = files.map((_, i) => `storage away ${i} ${randomBytes(3).toString("hex")}`);
    const answers = await inParallel(files.length, 5, (i) => add(names[i] as string, files[i] as Buffer));
    const identities = await Promise.all(files.map((file) => identityOf({ file })));
    for (const [i, answer] of answers.entries()) {
      expectEnvelope(answer, 201, names[i]);
      expect((answer.body.data as ProjectDto).fileHash).toBe(identities[i]?.fileHash);
      // Pinned by the gateway before the write: storage is not on the write path.
      expect(await isPinned(sys.ipfsUrl as string, identities[i]?.cid as string), names[i]).toBe(true);
    }
    expect(await ownProjectNames()).toEqual(expect.arrayContaining(names));

    // The `projects.content.taken` events waited in storage's queue: each content gets its live row.
    await sys.startService("storage");
    const hashes = identities.map((identity) => identity.fileHash);
    await expect
      .poll(() => liveRows(hashes), { timeout: 60_000, interval: 250 })
      .toEqual(hashes.map(() => 1));
  });

  it("a client gone mid-body: nothing written or pinned, and the gateway serves on", async () => {
    const file = randomBytes(4 * MiB);
    const name = `client gone ${randomBytes(3).toString("hex")}`;
    const hex = file.toString("hex");
    const req = httpRequest(`${sys.gatewayUrl}/Project/Add`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    });
    req.on("error", () => undefined);
    await new Promise<void>((resolve) =>
      req.write(`{"projectName":"${name}","fileHex":"${hex.slice(0, 4 * MiB)}`, () => resolve()),
    );
    req.destroy();
    expect(await ownProjectNames()).not.toContain(name);
    // The gateway cancels the half-sent add: a directory it never completed is never pinned.
    expect(await isPinned(sys.ipfsUrl as string, (await identityOf({ file })).cid)).toBe(false);
    expectEnvelope(await add(name, file), 201, "the same Add sent whole");
  });

  it("with two storage instances, concurrent Adds all land with their own content, recorded once each", async () => {
    await sys.startService("storage");
    const files = Array.from({ length: 6 }, () => randomBytes(MiB + 1234));
    const names = files.map((_, i) => `two instances ${i} ${randomBytes(3).toString("hex")}`);
    const answers = await Promise.all(files.map((file, i) => add(names[i] as string, file)));
    const identities = await Promise.all(files.map((file) => identityOf({ file })));
    for (const [i, answer] of answers.entries()) {
      expectEnvelope(answer, 201, names[i]);
      expect((answer.body.data as ProjectDto).fileHash).toBe(identities[i]?.fileHash);
    }
    // Both instances consume `projects.content.taken`: one live row per content all the same.
    const hashes = identities.map((identity) => identity.fileHash);
    await expect
      .poll(() => liveRows(hashes), { timeout: 30_000, interval: 250 })
      .toEqual(hashes.map(() => 1));
  });

  it("IPFS stopped: 503 IPFS_UNAVAILABLE and nothing written; once it is back the same Add succeeds", async () => {
    const file = randomBytes(2 * MiB);
    const name = `ipfs stopped ${randomBytes(3).toString("hex")}`;
    await sys.ipfsNode?.stop();
    try {
      const res = await add(name, file);
      expectEnvelope(res, 503, "IPFS stopped");
      expect(res.headers.get("x-error-code")).toBe("IPFS_UNAVAILABLE");
    } finally {
      await sys.ipfsNode?.start();
    }
    expect(await ownProjectNames()).not.toContain(name);
    expect(await isPinned(sys.ipfsUrl as string, (await identityOf({ file })).cid)).toBe(false);
    expectEnvelope(await add(name, file), 201, "once IPFS is back");
  });
});
