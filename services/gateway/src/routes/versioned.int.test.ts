import { gunzipSync } from "node:zlib";
import { type Caller, ProjectsRpc } from "@fundraise/protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../test/harness.ts";
import { projectDto } from "../test/route-samples.ts";

// The hot lists answered by version (routes/versioned.ts), against a projects stand-in on the in-memory
// bus whose tag is what projects' listTag says for each view: anonymous and Admin share views, a signed-in
// Base caller does not (null).
let h: Harness;
let version: number;
let listed: (Caller | null)[];
beforeEach(async () => {
  h = await createHarness();
  version = 1;
  listed = [];
  await h.bus.serve(ProjectsRpc.listTag, async ({ caller }) => {
    if (caller === null) return `open@${version}`;
    return caller.role === "Admin" ? `all@${version}` : null;
  });
  await h.bus.serve(ProjectsRpc.list, async ({ caller }) => {
    listed.push(caller);
    return [projectDto(caller === null ? 1 : 2, { projectName: `v${version}` })];
  });
});
afterEach(() => h?.close());

const get = (url: string, headers: Record<string, string> = {}) =>
  h.app.inject({ method: "GET", url, headers });

describe("GET /Project/Get/All by version", () => {
  it("an ETag per view and version; the copy serves until the version moves; If-None-Match gets 304", async () => {
    const first = await get("/Project/Get/All");
    expect(first.statusCode).toBe(200);
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"[\w-]{27}"$/);
    expect(first.headers["cache-control"]).toBe("private, no-cache");
    expect(first.json().data[0].projectName).toBe("v1");

    const again = await get("/Project/Get/All");
    expect(again.body).toBe(first.body);
    expect(again.headers.etag).toBe(etag);
    expect(listed).toEqual([null]);

    const revalidated = await get("/Project/Get/All", { "if-none-match": etag });
    expect(revalidated.statusCode).toBe(304);
    expect(revalidated.body).toBe("");
    expect(listed).toEqual([null]);

    version = 2;
    const moved = await get("/Project/Get/All", { "if-none-match": etag });
    expect(moved.statusCode).toBe(200);
    expect(moved.headers.etag).not.toBe(etag);
    expect(moved.json().data[0].projectName).toBe("v2");
    expect(listed).toEqual([null, null]);
  });

  it("gzips the copy once for clients that accept it; the same JSON; Vary: Accept-Encoding", async () => {
    await h.bus.serve(ProjectsRpc.list, async ({ caller }) => {
      listed.push(caller);
      return Array.from({ length: 30 }, (_, i) => projectDto(i + 1, { projectName: `project ${i}` }));
    });
    const plain = await get("/Project/Get/All");
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.headers.vary).toMatch(/accept-encoding/i);
    for (const accept of ["gzip", "br, gzip;q=0.8", "*"]) {
      const zipped = await get("/Project/Get/All", { "accept-encoding": accept });
      expect(zipped.headers["content-encoding"], accept).toBe("gzip");
      expect(gunzipSync(zipped.rawPayload).toString(), accept).toBe(plain.body);
    }
    const refused = await get("/Project/Get/All", { "accept-encoding": "gzip;q=0, identity" });
    expect(refused.headers["content-encoding"]).toBeUndefined();
    expect(refused.body).toBe(plain.body);
    expect(listed).toEqual([null]);
  });

  it("never serves one view's copy to another: Admin's ETag and answer are its own", async () => {
    const anonymous = await get("/Project/Get/All");
    const admin = await get("/Project/Get/All", {
      authorization: `Bearer ${await h.signer.sign({ userId: 9, role: "Admin" })}`,
      "if-none-match": anonymous.headers.etag as string,
    });
    expect(admin.statusCode).toBe(200);
    expect(admin.headers.etag).not.toBe(anonymous.headers.etag);
    expect(admin.json().data[0].projectID).toBe(2);
    expect(listed.map((caller) => caller?.role ?? null)).toEqual([null, "Admin"]);
  });

  it("a single read of a shared view: 304 without reading the project while the version holds", async () => {
    let reads = 0;
    await h.bus.serve(ProjectsRpc.get, async ({ id }) => {
      reads += 1;
      return projectDto(id, { projectName: `v${version}` });
    });
    const first = await get("/Project/Get/7");
    expect(first.statusCode).toBe(200);
    const etag = String(first.headers.etag);
    expect((await get("/project/get/7/", { "if-none-match": etag })).statusCode).toBe(304);
    expect(reads).toBe(1);
    // Another project of the same view has its own tag.
    expect((await get("/Project/Get/8", { "if-none-match": etag })).statusCode).toBe(200);
    version = 2;
    const moved = await get("/Project/Get/7", { "if-none-match": etag });
    expect(moved.statusCode).toBe(200);
    expect(moved.json().data.projectName).toBe("v2");
  });

  it("a caller whose list is their own, and withHex, are listed each time; the content's ETag saves the transfer", async () => {
    const base = { authorization: `Bearer ${await h.signer.sign({ userId: 5, role: "Base" })}` };
    const first = await get("/Project/Get/All", base);
    expect(first.statusCode).toBe(200);
    expect(first.headers["cache-control"]).toBe("private, no-cache");
    expect(first.headers.etag).toMatch(/^"[\w-]{27}"$/);
    const again = await get("/Project/Get/All", { ...base, "if-none-match": String(first.headers.etag) });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe("");
    const withHex = await get("/Project/Get/All?withHex=true");
    expect(withHex.statusCode).toBe(200);
    expect(withHex.headers.etag).not.toBe(first.headers.etag);
    expect(listed).toHaveLength(3);
  });
});
