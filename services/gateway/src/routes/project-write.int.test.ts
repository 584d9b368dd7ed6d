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
