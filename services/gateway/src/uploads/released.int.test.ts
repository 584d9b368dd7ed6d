import { fileHashOf } from "@fundraise/ipfs";
import { ErrorCode, errors, ProjectsRpc, type RequestOf } from "@fundraise/protocol";
import { CID } from "multiformats/cid";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../test/harness.ts";
import { projectDto } from "../test/route-samples.ts";

// An Add whose content was released meanwhile (protocol's content-release.ts): the gateway waits while an
// unpin may land, pins again once every release is over, and writes with the version it waited for. The
// projects service is a stand-in here that answers as its release rule does; the rule itself is
// projects' project.content.test.ts.
let h: Harness;
let sent: RequestOf<typeof ProjectsRpc.add>[] = [];
beforeEach(async () => {
  h = await createHarness();
  sent = [];
});
afterEach(() => h?.close());

const add = async (projectName: string) =>
  h.app.inject({
    method: "POST",
    url: "/Project/Add",
    headers: { authorization: `Bearer ${await h.signer.sign({ userId: 5, role: "Base" })}` },
    payload: { projectName, fileHex: "25504446" },
  });

const released = (fileHash: string, version: number, waitMs: number) =>
  errors.unavailable(ErrorCode.CONTENT_RELEASED, "released", { details: { fileHash, version, waitMs } });

describe("an Add whose content was released meanwhile", () => {
  it("waits while an unpin may land, then pins again (after the unpin) and writes with the version", async () => {
    await h.bus.serve(ProjectsRpc.add, async (request) => {
      sent.push(request);
      const { cid, repinnedAfter } = request.project.content ?? { cid: "" };
      const fileHash = fileHashOf(cid);
      // The release's unpin lands after the gateway's pin: only a pin after it keeps the content.
      if (sent.length === 1) {
        await h.ipfs.ipfs.unpin(CID.parse(cid));
        throw released(fileHash, 7, 300);
      }
      if (repinnedAfter !== 7) throw released(fileHash, 7, 0);
      expect(await h.ipfs.pinned(cid)).toBe(true);
      return projectDto(1, { fileHash, projectName: request.project.projectName });
    });
    const res = await add("Again");
    expect(res.statusCode, res.body).toBe(201);
    expect(sent.map((r) => r.project.content?.repinnedAfter)).toEqual([undefined, undefined, 7]);
    expect(await h.ipfs.pinned(sent[0]?.project.content?.cid as string)).toBe(true);
  });

  it("a release that never ends: 503 CONTENT_RELEASED to send again, within the window and a margin", async () => {
    await h.bus.serve(ProjectsRpc.add, async (request) => {
      sent.push(request);
      throw released(fileHashOf(request.project.content?.cid ?? ""), 3, 60_000);
    });
    const started = performance.now();
    const res = await add("Never");
    expect(res.statusCode).toBe(503);
    expect(res.headers["x-error-code"]).toBe(ErrorCode.CONTENT_RELEASED);
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(sent.length).toBeGreaterThan(10);
  }, 60_000);
});
