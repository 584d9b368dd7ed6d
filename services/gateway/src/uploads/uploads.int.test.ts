import { createKuboIpfs, fileHashOf } from "@fundraise/ipfs";
import { fakeKuboNodes } from "@fundraise/ipfs/testing";
import { ErrorCode, errors, ProjectsRpc, type RequestOf, StorageErrorCode } from "@fundraise/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../test/harness.ts";
import { projectDto } from "../test/route-samples.ts";

// The content path at the edge: uploads added to IPFS while the body arrives, and withHex read back
// from it. IPFS is OUR KUBO-RPC STAND-IN (packages/ipfs-node, not Kubo), or a silent HTTP server
// standing in for a node that accepts and never answers.
const harnesses: Harness[] = [];
const nodes = fakeKuboNodes();
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
  await nodes.closeAll();
});

async function gateway(env: Record<string, string> = {}, ipfsUrl?: string) {
  const ipfs = ipfsUrl ? createKuboIpfs({ url: ipfsUrl, timeoutMs: 300, readTimeoutMs: 300 }) : undefined;
  const h = await createHarness(env, undefined, ipfs ? { ipfs } : {});
  harnesses.push(h);
  const sent: RequestOf<typeof ProjectsRpc.add>[] = [];
  await h.bus.serve(ProjectsRpc.add, async (request) => {
    sent.push(request);
    throw errors.conflict(ErrorCode.PROJECT_NAME_TAKEN, "A project with this name exists.");
  });
  const token = await h.signer.sign({ userId: 5, role: "Base" });
  const add = (body: Record<string, unknown>) =>
    h.app.inject({
      method: "POST",
      url: "/Project/Add",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      payload: JSON.stringify(body),
    });
  return { h, sent, add, token };
}

describe("uploads at the edge", () => {
  it("413 as soon as a file or an image passes its limit, mid-body; its add is cancelled, nothing is sent", async () => {
    const { h, sent, add } = await gateway({ MAX_FILE_BYTES: "1048576", MAX_IMAGE_BYTES: "65536" });
    const file = await add({ projectName: "S", fileHex: "ab".repeat(1048577) });
    expect(file.statusCode).toBe(413);
    expect(file.json()).toEqual({
      data: null,
      success: false,
      message: "The file is larger than 1048576 bytes.",
    });
    const image = await add({ projectName: "S", fileHex: "ab", imageUrl: "cd".repeat(65537) });
    expect(image.statusCode).toBe(413);
    expect(image.json().message).toBe("The image is larger than 65536 bytes.");
    expect(sent).toEqual([]);
    await expect.poll(() => h.ipfs.adds.map((a) => a.outcome)).toEqual(["failed", "failed"]);
    // At the limit exactly: accepted and handed on.
    await add({ projectName: "S", fileHex: "ab".repeat(1048576) });
    expect(sent[0]?.project.content).toMatchObject({ fileBytes: 1048576, imageBytes: null });
  });

  it("IPFS down: 503 in the envelope, nothing is sent", async () => {
    const { h, sent, add } = await gateway();
    await h.ipfs.stop();
    const res = await add({ projectName: "S", fileHex: "ab".repeat(100_000) });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({
      data: null,
      success: false,
      message: "IPFS is unavailable; try again later.",
    });
    expect(sent).toEqual([]);
  });

  it("IPFS that accepts and never answers: 504 after IPFS_TIMEOUT_MS, not a hang; nothing is sent", async () => {
    const { sent, add } = await gateway({ IPFS_TIMEOUT_MS: "300" }, await nodes.silent());
    const started = performance.now();
    const res = await add({ projectName: "S", fileHex: "ab".repeat(1000) });
    expect(res.statusCode).toBe(504);
    expect(res.headers["x-error-code"]).toBe(StorageErrorCode.IPFS_TIMEOUT);
    // After the 300 ms deadline, not a hang: any bound well below the test's limit tells them apart.
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(sent).toEqual([]);
  });
});

describe("withHex: the gateway reads each file from IPFS", () => {
  it("lists carry fileHex read from the node; a file the node lost leaves it out; none without withHex", async () => {
    const { h, token } = await gateway();
    const file = Buffer.from("whitepaper of Solar");
    const cid = await h.ipfs.seed(file);
    const held = { ...projectDto(1), fileHash: fileHashOf(cid) };
    const lost = { ...projectDto(2), fileHash: "AB".repeat(32) };
    await h.bus.serve(ProjectsRpc.list, async () => [held, lost]);
    await h.bus.serve(ProjectsRpc.listPermissioned, async () => [held]);
    const get = async (url: string) =>
      (await h.app.inject({ method: "GET", url, headers: { authorization: `Bearer ${token}` } })).json();
    const all = await get("/Project/Get/All?withHex=true");
    expect(all.data.map((p: { fileHex?: string }) => p.fileHex)).toEqual([file.toString("hex"), undefined]);
    expect((await get("/Project/GetAllPermissioned/true")).data[0].fileHex).toBe(file.toString("hex"));
    expect((await get("/Project/Get/All")).data[0]).not.toHaveProperty("fileHex");
    expect((await get("/Project/GetAllPermissioned")).data[0]).not.toHaveProperty("fileHex");
  });

  it("IPFS down: 503 for withHex lists; the list without it is unaffected", async () => {
    const { h } = await gateway();
    const cid = await h.ipfs.seed(Buffer.from("x"));
    await h.bus.serve(ProjectsRpc.list, async () => [{ ...projectDto(1), fileHash: fileHashOf(cid) }]);
    await h.ipfs.stop();
    expect((await h.app.inject({ method: "GET", url: "/Project/Get/All?withHex=true" })).statusCode).toBe(
      503,
    );
    expect((await h.app.inject({ method: "GET", url: "/Project/Get/All" })).statusCode).toBe(200);
  });
});
