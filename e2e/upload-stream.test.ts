import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../scripts/lib/processes.ts";
import { createClient } from "./client.ts";
import { expectEnvelope, identityOf, isPinned, type ProjectDto } from "./projects-kit.ts";
import { type System, startSystem } from "./system.ts";

// An Add's content streamed from the gateway to a storage instance while the body arrives, on a system of
// its own (services as processes; IPFS: the Kubo-RPC stand-in of packages/ipfs-node, not Kubo): a storage
// instance killed mid-stream, a client gone mid-body, several storage instances, IPFS stopped. Storage
// instances serve /metrics on a health port of their own (`storage_uploads_open`,
// `storage_upload_parts_total`); uploads idle for 1 s are dropped (UPLOAD_IDLE_MS).
const MiB = 1024 * 1024;
let sys: System;
const client = createClient(() => sys);
let token: string;
/** The health port of the storage instance that serves now. */
let storagePort: number;

beforeAll(async () => {
  storagePort = await freePort();
  sys = await startSystem({
    services: ["users", "auth", "storage", "projects", "gateway"],
    // One proposer adds more than the 5 waiting projects a proposer may have (not what this file tests).
    env: { UPLOAD_IDLE_MS: "1000", REVIEW_QUEUE_PER_PROPOSER: "100" },
    serviceEnv: { storage: { HEALTH_PORT: String(storagePort) } },
  });
  const user = await client.signedUpUser();
  token = await client.tokenOf(user.wallet);
});
afterAll(() => sys?.stop());

/** A metric of the storage instance at `port` now. */
async function storageMetric(port: number, name: string): Promise<number> {
  const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
  return Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1] ?? Number.NaN);
}
/** Uploads receiving parts on the storage instance at `port` now. */
const uploadsOpen = (port: number) => storageMetric(port, "storage_uploads_open");

/** An Add whose body is sent in two writes, `between` running after the first: the client's side. */
function addInTwoWrites(name: string, file: Buffer, cut: number, between: () => Promise<void>) {
  const hex = file.toString("hex");
  const head = `{"projectName":"${name}","projectDescription":"streamed","fileHex":"${hex.slice(0, cut)}`;
  const tail = `${hex.slice(cut)}"}`;
  return new Promise<{ status: number; body: unknown; code: string | undefined }>((resolve, reject) => {
    const req = httpRequest(`${sys.gatewayUrl}/Project/Add`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        "content-length": Buffer.byteLength(head) + Buffer.byteLength(tail),
      },
    });
    req.on("error", reject);
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          body: JSON.parse(Buffer.concat(chunks).toString()),
          code: res.headers["x-error-code"] as string | undefined,
        }),
      );
    });
    req.write(head);
    between().then(() => req.end(tail), reject);
  });
}

const add = (name: string, file: Buffer) =>
  client.api("POST", "/Project/Add", {
    token,
    body: { projectName: name, projectDescription: "streamed", fileHex: file.toString("hex") },
  });

const ownProjectNames = async () =>
  ((await client.api("GET", "/Project/GetAllPermissioned/false", { token })).body.data as ProjectDto[]).map(
    (p) => p.projectName,
  );

describe("an Add streamed to storage", () => {
  it("the storage instance killed mid-stream: a 503 envelope, nothing written; the retry succeeds", async () => {
    const file = randomBytes(6 * MiB);
    const name = `killed mid-stream ${randomBytes(3).toString("hex")}`;
    const answer = await addInTwoWrites(name, file, 4 * MiB, async () => {
      // Parts arrive: the gateway knows the upload's instance (an instance killed before its answer to
      // the open was written would leave the gateway waiting for that answer: 504, not this case).
      await expect
        .poll(() => storageMetric(storagePort, "storage_upload_parts_total"), { timeout: 20_000 })
        .toBeGreaterThan(0);
      expect(await uploadsOpen(storagePort)).toBe(1);
      process.kill(sys.pids.storage as number, "SIGKILL");
    });
    expect(answer).toMatchObject({ status: 503, code: "STREAM_INTERRUPTED" });
    expect(answer.body).toEqual({
      data: null,
      success: false,
      message: "The storage service stopped receiving this upload; send it again.",
    });
    expect(await ownProjectNames()).not.toContain(name);
    const { cid, fileHash } = await identityOf({ file });
    expect(await isPinned(sys.ipfsUrl as string, cid)).toBe(false);

    storagePort = await freePort();
    await sys.startService("storage", { HEALTH_PORT: String(storagePort) });
    const retry = await add(name, file);
    expectEnvelope(retry, 201, "the retry");
    expect((retry.body.data as ProjectDto).fileHash).toBe(fileHash);
    expect(await isPinned(sys.ipfsUrl as string, cid)).toBe(true);
    expect(await ownProjectNames()).toContain(name);
  });

  it("a client gone mid-body: its upload is dropped on the storage instance, nothing pinned", async () => {
    const file = randomBytes(4 * MiB);
    const name = `client gone ${randomBytes(3).toString("hex")}`;
    const hex = file.toString("hex");
    const req = httpRequest(`${sys.gatewayUrl}/Project/Add`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    });
    req.on("error", () => undefined);
    req.write(`{"projectName":"${name}","fileHex":"${hex.slice(0, 4 * MiB)}`);
    await expect.poll(() => uploadsOpen(storagePort), { timeout: 20_000 }).toBe(1);
    req.destroy();
    await expect.poll(() => uploadsOpen(storagePort), { timeout: 20_000 }).toBe(0);
    expect(await ownProjectNames()).not.toContain(name);
    expect(await isPinned(sys.ipfsUrl as string, (await identityOf({ file })).cid)).toBe(false);
  });

  it("with two storage instances, concurrent Adds all land with their own content", async () => {
    await sys.startService("storage", { HEALTH_PORT: String(await freePort()) });
    const files = Array.from({ length: 6 }, () => randomBytes(MiB + 1234));
    const names = files.map((_, i) => `two instances ${i} ${randomBytes(3).toString("hex")}`);
    const answers = await Promise.all(files.map((file, i) => add(names[i] as string, file)));
    for (const [i, answer] of answers.entries()) {
      expectEnvelope(answer, 201, names[i]);
      expect((answer.body.data as ProjectDto).fileHash).toBe(
        (await identityOf({ file: files[i]! })).fileHash,
      );
    }
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
