import { request as httpRequest, type OutgoingHttpHeaders } from "node:http";
import { ProjectsRpc, UsersRpc } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, userOf } from "../test/harness.ts";

// `Authorization` is exactly one `Bearer <token>` (rules.md §7.6), and the web client's empty
// bearers still mean anonymous (rules.md §1.6).
let h: Harness;
let port: number;
let token: string;
const callers: unknown[] = [];

beforeAll(async () => {
  h = await createHarness();
  token = await h.signer.sign({ userId: 21, role: "Base", username: "ada" });
  await h.bus.serve(UsersRpc.count, async () => 2);
  await h.bus.serve(UsersRpc.get, async ({ caller }) => userOf(caller));
  await h.bus.serve(ProjectsRpc.list, async ({ caller }) => {
    callers.push(caller);
    return [];
  });
  const address = await h.app.listen({ port: 0, host: "127.0.0.1" });
  port = Number(new URL(address).port);
});
afterAll(() => h.close());

const MALFORMED = {
  data: null,
  success: false,
  message: "The Authorization header must be exactly one `Bearer <token>`.",
};
const MISSING = { data: null, success: false, message: "Sign in first." };

const get = (url: string, authorization?: string | string[]) =>
  h.app.inject({
    url,
    headers: (authorization === undefined ? {} : { authorization }) as OutgoingHttpHeaders,
  });

/** A real request, for what Node itself does with headers (trimming, repeated headers). */
function viaSocket(url: string, rawHeaders: string[]): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const headers = ["Host", `127.0.0.1:${port}`, ...rawHeaders];
    const req = httpRequest({ host: "127.0.0.1", port, path: url, headers }, (res) => {
      let body = "";
      res.on("data", (c) => {
        body += c;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(body) }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the Authorization header", () => {
  it("accepts exactly `Bearer <token>`, the scheme in any case", async () => {
    for (const scheme of ["Bearer", "bearer", "BEARER"]) {
      const res = await get("/user/get", `${scheme} ${token}`);
      expect(res.statusCode, scheme).toBe(200);
      expect(res.json().data).toMatchObject({ id: 21, username: "ada" });
    }
  });

  it("answers 401 on a signed-in route to anything else carrying a token", async () => {
    for (const header of [
      token,
      `Bearer${token}`,
      `Bearer  ${token}`,
      `Bearer\t${token}`,
      `Bearer ${token} ${token}`,
      `Basic ${token}`,
      `Token ${token}`,
      `Bearer: ${token}`,
    ]) {
      const res = await get("/user/get", header);
      expect(res.statusCode, header).toBe(401);
      expect(res.headers["x-error-code"], header).toBe("TOKEN_INVALID");
      expect(res.json(), header).toEqual(MALFORMED);
    }
  });

  it("answers 401 to a repeated Authorization header, even when both are valid", async () => {
    const res = await get("/user/get", [`Bearer ${token}`, `Bearer ${token}`]);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual(MALFORMED);
    // Node keeps only the first of repeated Authorization headers; the raw headers still show both.
    const real = await viaSocket("/user/get", [
      "Authorization",
      `Bearer ${token}`,
      "Authorization",
      "Bearer x",
    ]);
    expect(real).toEqual({ status: 401, body: MALFORMED });
  });

  it("treats no header, `Bearer undefined`, `Bearer null` and `Bearer ` as anonymous", async () => {
    for (const header of [
      undefined,
      "",
      "Bearer undefined",
      "Bearer null",
      "Bearer ",
      "Bearer",
      "bearer NULL",
    ]) {
      const open = await get("/user/learnusercount", header);
      expect(open.statusCode, String(header)).toBe(200);
      expect(open.json(), String(header)).toEqual({ data: 2, success: true, message: null });
      const closed = await get("/user/get", header);
      expect(closed.statusCode, String(header)).toBe(401);
      expect(closed.headers["x-error-code"], String(header)).toBe("TOKEN_MISSING");
      expect(closed.json(), String(header)).toEqual(MISSING);
    }
    // On a socket Node trims `Bearer ` to `Bearer`: still anonymous.
    expect(await viaSocket("/user/learnusercount", ["Authorization", "Bearer "])).toEqual({
      status: 200,
      body: { data: 2, success: true, message: null },
    });
    expect(await viaSocket("/user/get", ["Authorization", "Bearer "])).toEqual({
      status: 401,
      body: MISSING,
    });
  });

  it("runs an anonymous route as anonymous when the header is malformed or the token invalid", async () => {
    callers.length = 0;
    for (const header of [token, `Bearer${token}`, "Bearer garbage"]) {
      expect((await get("/Project/Get/All", header)).statusCode, header).toBe(200);
    }
    expect((await get("/Project/Get/All", [`Bearer ${token}`, `Bearer ${token}`])).statusCode).toBe(200);
    expect((await get("/Project/Get/All", `Bearer ${token}`)).statusCode).toBe(200);
    expect(callers).toEqual([null, null, null, null, expect.objectContaining({ userId: 21 })]);
  });
});
