import { Readable } from "node:stream";
import { ErrorCode, errors, ProjectsRpc, type RequestOf } from "@fundraise/protocol";
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
    expect(sent[0]?.project.image).toBeNull();
  });

  it("hex is a new image, as bytes", async () => {
    await update({ projectID: "7", projectName: "Solar", imageUrl: "89504e47" });
    expect(Buffer.from(sent[0]?.project.image as Uint8Array).toString("hex")).toBe("89504e47");
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
  });
});

describe("upload bodies are read as they arrive (plugins/hex-body.ts)", () => {
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

  it("a 1 MiB file in any key case arrives as its exact bytes, beside the other fields", async () => {
    const file = Buffer.alloc(1024 * 1024, 7);
    file.write("whitepaper", 0);
    await raw(
      JSON.stringify({ FileHex: file.toString("hex").toUpperCase(), projectname: "Solar", ProjectID: 7 }),
    );
    expect(sent).toHaveLength(1);
    expect(Buffer.from(sent[0]?.project.file as Uint8Array).equals(file)).toBe(true);
    expect(sent[0]?.project.projectName).toBe("Solar");
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
