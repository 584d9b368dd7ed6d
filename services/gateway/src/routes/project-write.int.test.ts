import { request as httpRequest } from "node:http";
import { Readable } from "node:stream";
import { kuboDirectoryCidOf } from "@fundraise/ipfs-node";
import { ErrorCode, errors, ProjectsRpc, type RequestOf } from "@fundraise/protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../test/harness.ts";

// What the gateway hands the projects service for the old web client's Update bodies.
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
    expect(h.ipfs.adds).toEqual([]);
  });

  it("hex is a new image, which comes with the file only: a 400, its add cancelled, nothing sent", async () => {
    const res = await update({ projectID: "7", projectName: "Solar", imageUrl: "89504e47" });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toBe("An image comes with the file: send fileHex too.");
    expect(sent).toEqual([]);
    await expect.poll(() => h.ipfs.adds.map((add) => add.outcome)).toEqual(["failed"]);
  });

  it("hex image and file: both entries of one directory, pinned as added", async () => {
    await update({ projectID: "7", projectName: "Solar", imageUrl: "89504e47", fileHex: "25504446" });
    const content = sent[0]?.project.content ?? null;
    expect(content).toMatchObject({ fileBytes: 4, imageBytes: 4 });
    expect(await h.ipfs.hexOf(content)).toEqual({ whitepaper: "25504446", image: "89504e47" });
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
    expect(h.ipfs.adds).toEqual([]);
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

  it("a 3 MiB file and an image in any key case reach IPFS as their exact bytes: Kubo's CID, one directory", async () => {
    const file = Buffer.alloc(3 * 1024 * 1024 + 5, 7);
    file.write("whitepaper", 0);
    const image = Buffer.from("89504e470d0a1a0a", "hex");
    await raw(
      JSON.stringify({
        FileHex: file.toString("hex").toUpperCase(),
        projectname: "Solar",
        IMAGEURL: image.toString("hex"),
        ProjectID: 7,
      }),
    );
    expect(sent).toHaveLength(1);
    const content = sent[0]?.project.content ?? null;
    const expected = await kuboDirectoryCidOf({ whitepaper: file, image });
    expect(content).toEqual({
      cid: expected.toString(),
      fileBytes: file.length,
      imageBytes: image.length,
      pinnedAt: expect.any(Number),
    });
    expect(await h.ipfs.hexOf(content)).toEqual({
      whitepaper: file.toString("hex"),
      image: image.toString("hex"),
    });
    expect(sent[0]?.project.projectName).toBe("Solar");
    expect(h.ipfs.adds).toEqual([{ outcome: "added", cid: expected.toString() }]);
  });

  it("an image sent before the file gives the same directory, so the same fileHash the chain knows", async () => {
    const file = Buffer.from("whitepaper second");
    const image = Buffer.from("89504e47", "hex");
    await raw(
      JSON.stringify({
        imageUrl: image.toString("hex"),
        projectName: "S",
        ProjectID: 7,
        fileHex: file.toString("hex"),
      }),
    );
    const expected = await kuboDirectoryCidOf({ whitepaper: file, image });
    expect(sent[0]?.project.content?.cid).toBe(expected.toString());
  });

  it("a short 0x-prefixed value (kept as text while the body arrived) is decoded and added after it", async () => {
    await raw(JSON.stringify({ projectName: "Solar", ProjectID: 7, fileHex: "0xC0FFEE" }));
    expect(await h.ipfs.hexOf(sent[0]?.project.content ?? null)).toEqual({ whitepaper: "c0ffee" });
  });

  it("an empty file or image is a 400 naming it, and nothing is sent", async () => {
    for (const [body, message] of [
      [{ projectName: "S", ProjectID: 7, fileHex: "0x" }, "The file is empty."],
      [{ projectName: "S", ProjectID: 7, fileHex: "ab", imageUrl: "0x" }, "The image is empty."],
    ] as const) {
      const res = await raw(JSON.stringify(body));
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().message).toBe(message);
    }
    expect(sent).toEqual([]);
  });

  it("a content field given twice (two spellings) is a 400, and its add is cancelled", async () => {
    const res = await raw(`{"projectName":"S","fileHex":"${"ab".repeat(300_000)}","FILEHEX":"cdcd"}`);
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toBe("fileHex is given more than once.");
    expect(sent).toEqual([]);
    await expect.poll(() => h.ipfs.adds.map((add) => add.outcome)).toEqual(["failed"]);
  });

  it("a client that goes away mid-body: its add is cancelled, nothing is sent", async () => {
    const address = await h.app.listen({ port: 0, host: "127.0.0.1" });
    const token = await h.signer.sign({ userId: 5, role: "Base" });
    const req = httpRequest(`${address}/Project/Update`, {
      method: "PUT",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    });
    req.on("error", () => undefined);
    req.write(`{"projectID":7,"projectName":"Solar","fileHex":"${"ab".repeat(600_000)}`);
    await expect.poll(() => h.ipfs.adds.length).toBe(1);
    req.destroy();
    await expect.poll(() => h.ipfs.adds[0]?.outcome).toBe("failed");
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
    // What was added of them before the 400 is cancelled.
    await expect.poll(() => h.ipfs.adds.every((add) => add.outcome === "failed")).toBe(true);
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
