import { request as httpRequest } from "node:http";
import { Readable } from "node:stream";
import { ErrorCode, errors, ProjectsRpc, type RequestOf, StorageUpload } from "@fundraise/protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../test/harness.ts";

// What the gateway hands the projects service for the web client's Update bodies (first-implementation §11).
let h: Harness;
let sent: RequestOf<typeof ProjectsRpc.update>[] = [];
beforeEach(async () => {
  h = await createHarness();
  sent = [];
  await h.bus.serve(ProjectsRpc.update, async (request) => {
    sent.push(request);
    throw errors.notFound(ErrorCode.PROJECT_NOT_FOUND, "No such project.");
  });
});
afterEach(() => h?.close());

const update = async (body: Record<string, unknown>) =>
  h.app.inject({
    method: "PUT",
    url: "/Project/Update",
    headers: { authorization: `Bearer ${await h.signer.sign({ userId: 5, role: "Base" })}` },
    payload: body,
  });

describe("PUT /Project/Update's imageUrl", () => {
  it("an IPFS path read back from a ProjectDTO keeps the image (no new image, not a 400)", async () => {
    const res = await update({
      ProjectID: 7,
      ProjectName: "Solar",
      imageUrl: "/ipfs/QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o/image",
    });
    expect(res.statusCode).toBe(404);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.project.content).toBeNull();
    expect(h.uploads.uploads.size).toBe(0);
  });

  it("hex is a new image, streamed to storage as bytes; the refused write's upload is aborted", async () => {
    await update({ projectID: "7", projectName: "Solar", imageUrl: "89504e47" });
    const content = sent[0]?.project.content ?? null;
    expect(content).toMatchObject({ file: false, image: true, stream: { parts: 1 } });
    expect(h.uploads.hexOf(content)).toEqual({ image: "89504e47" });
    await expect.poll(() => h.uploads.of(content)?.outcome).toBe("aborted");
  });

  it("anything else is a 400 naming the field, and nothing is sent", async () => {
    const res = await update({ projectID: 7, projectName: "Solar", imageUrl: "not hex" });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      data: null,
      success: false,
      message: "imageUrl must be a hexadecimal string of whole bytes.",
    });
    expect(sent).toEqual([]);
    expect(h.uploads.uploads.size).toBe(0);
  });
});

describe("upload bodies are read as they arrive (plugins/hex-body.ts, uploads/)", () => {
  const raw = async (payload: string, headers: Record<string, string> = {}) =>
    h.app.inject({
      method: "PUT",
      url: "/Project/Update",
      headers: {
        authorization: `Bearer ${await h.signer.sign({ userId: 5, role: "Base" })}`,
        "content-type": "application/json",
        ...headers,
      },
      payload,
    });

  it("a 1 MiB file in any key case reaches storage as its exact bytes, in parts; the write names the upload", async () => {
    const file = Buffer.alloc(1024 * 1024 + 5, 7);
    file.write("whitepaper", 0);
    await raw(
      JSON.stringify({ FileHex: file.toString("hex").toUpperCase(), projectname: "Solar", ProjectID: 7 }),
    );
    expect(sent).toHaveLength(1);
    const content = sent[0]?.project.content ?? null;
    const parts = Math.ceil(file.length / StorageUpload.partBytes);
    expect(parts).toBeGreaterThan(1);
    expect(content).toMatchObject({ file: true, image: false, stream: { parts } });
    expect(h.uploads.of(content)?.entries.whitepaper?.equals(file)).toBe(true);
    expect(sent[0]?.project.projectName).toBe("Solar");
  });

  it("a short 0x-prefixed value (kept as text while the body arrived) is decoded and sent after it", async () => {
    await raw(JSON.stringify({ projectName: "Solar", ProjectID: 7, fileHex: "0xC0FFEE" }));
    expect(h.uploads.hexOf(sent[0]?.project.content ?? null)).toEqual({ whitepaper: "c0ffee" });
  });

  it("a content field given twice (two spellings) is a 400, and what was sent of it is dropped", async () => {
    const res = await raw(`{"projectName":"S","fileHex":"${"ab".repeat(300_000)}","FILEHEX":"cdcd"}`);
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toBe("fileHex is given more than once.");
    expect(sent).toEqual([]);
    for (const upload of h.uploads.uploads.values()) expect(upload.outcome).toBe("aborted");
  });

  it("a client that goes away mid-body: its upload is aborted", async () => {
    const address = await h.app.listen({ port: 0, host: "127.0.0.1" });
    const token = await h.signer.sign({ userId: 5, role: "Base" });
    const req = httpRequest(`${address}/Project/Update`, {
      method: "PUT",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    });
    req.on("error", () => undefined);
    req.write(`{"projectID":7,"projectName":"Solar","fileHex":"${"ab".repeat(600_000)}`);
    await expect
      .poll(() => [...h.uploads.uploads.values()][0]?.entries.whitepaper?.length ?? 0)
      .toBeGreaterThan(0);
    req.destroy();
    await expect.poll(() => [...h.uploads.uploads.values()][0]?.outcome).toBe("aborted");
    expect(h.uploads.open()).toBe(0);
    expect(sent).toEqual([]);
  });

  it("bad long hex, odd length, bad JSON, an empty body and prototype keys are 400s; nothing is sent", async () => {
    const long = "ab".repeat(5000);
    const cases: [string, string][] = [
      [JSON.stringify({ projectName: "S", fileHex: `${long}xy` }), "fileHex must be a hexadecimal string"],
      [JSON.stringify({ projectName: "S", fileHex: `${long}a` }), "fileHex must be a hexadecimal string"],
      [`{"projectName":"S","fileHex":"${long}"`, "The request body is not valid JSON."],
      ["", "The request body is not valid JSON."],
      ['{"projectName":"S","__proto__":{"x":1}}', "The request body is not valid JSON."],
    ];
    for (const [payload, message] of cases) {
      const res = await raw(payload);
      expect(res.statusCode, payload.slice(0, 40)).toBe(400);
      expect(res.json().message).toContain(message);
    }
    expect(sent).toEqual([]);
    // What was streamed of them before the 400 is dropped.
    await expect
      .poll(() => [...h.uploads.uploads.values()].every((upload) => upload.outcome === "aborted"))
      .toBe(true);
  });
});

describe("the upload body limit (UPLOAD_BODY_LIMIT_BYTES)", () => {
  it("413 past it, whether the length is declared or only counted (chunked); nothing is sent", async () => {
    const small = await createHarness({ UPLOAD_BODY_LIMIT_BYTES: "4096" });
    const seen: unknown[] = [];
    await small.bus.serve(ProjectsRpc.add, async (request) => {
      seen.push(request);
      throw errors.notFound(ErrorCode.PROJECT_NOT_FOUND, "unused");
    });
    try {
      const token = await small.signer.sign({ userId: 5, role: "Base" });
      const body = JSON.stringify({ projectName: "S", fileHex: "ab".repeat(4096) });
      const declared = await small.app.inject({
        method: "POST",
        url: "/Project/Add",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        payload: body,
      });
      expect(declared.statusCode).toBe(413);
      const chunked = await small.app.inject({
        method: "POST",
        url: "/Project/Add",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          "transfer-encoding": "chunked",
        },
        payload: Readable.from([body.slice(0, 3000), body.slice(3000)]),
      });
      expect(chunked.statusCode).toBe(413);
      expect(chunked.json()).toEqual({
        data: null,
        success: false,
        message: "The request body is too large.",
      });
      expect(seen).toEqual([]);
    } finally {
      await small.close();
    }
  });
});
