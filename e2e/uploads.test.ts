import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "./client.ts";
import { expectEnvelope, identityOf, isPinned, type ProjectDto } from "./projects-kit.ts";
import { type System, startSystem } from "./system.ts";

// An Add's content added to IPFS by the gateway while the body arrives and pinned by storage once the
// write is accepted, on a system of its own (services as processes; IPFS: the Kubo-RPC stand-in of
// packages/ipfs-node, not Kubo): the storage service down, a client gone mid-body, several storage
// instances, IPFS stopped.
const MiB = 1024 * 1024;
let sys: System;
const client = createClient(() => sys);
let token: string;

beforeAll(async () => {
  sys = await startSystem({
    services: ["users", "auth", "storage", "projects", "gateway"],
    // One proposer adds more than the 5 waiting projects a proposer may have (not what this file tests).
    env: { REVIEW_QUEUE_PER_PROPOSER: "100" },
  });
  const user = await client.signedUpUser();
  token = await client.tokenOf(user.wallet);
});
afterAll(() => sys?.stop());

const add = (name: string, file: Buffer) =>
  client.api("POST", "/Project/Add", {
    token,
    body: { projectName: name, projectDescription: "streamed", fileHex: file.toString("hex") },
  });

const ownProjectNames = async () =>
  ((await client.api("GET", "/Project/GetAllPermissioned/false", { token })).body.data as ProjectDto[]).map(
    (p) => p.projectName,
  );

describe("an Add's content: added by the gateway, pinned by storage", () => {
  it("the storage service down: a 503 envelope, nothing written or pinned; the retry succeeds", async () => {
    const file = randomBytes(3 * MiB);
    const name = `storage down ${randomBytes(3).toString("hex")}`;
    process.kill(sys.pids.storage as number, "SIGKILL");
    const answer = await add(name, file);
    expectEnvelope(answer, 503, "storage down");
    expect(await ownProjectNames()).not.toContain(name);
    const { cid, fileHash } = await identityOf({ file });
    // The gateway added the bytes (unpinned: the node's garbage until a retry pins them).
    expect(await isPinned(sys.ipfsUrl as string, cid)).toBe(false);

    await sys.startService("storage");
    const retry = await add(name, file);
    expectEnvelope(retry, 201, "the retry");
    expect((retry.body.data as ProjectDto).fileHash).toBe(fileHash);
    expect(await isPinned(sys.ipfsUrl as string, cid)).toBe(true);
    expect(await ownProjectNames()).toContain(name);
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
    expect(await isPinned(sys.ipfsUrl as string, (await identityOf({ file })).cid)).toBe(false);
    expectEnvelope(await add(name, file), 201, "the same Add sent whole");
  });

  it("with two storage instances, concurrent Adds all land with their own content", async () => {
    await sys.startService("storage");
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
