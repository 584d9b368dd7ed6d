import { UsersRpc } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../test/harness.ts";

// A web client on another origin may call every method of the interface (rules.md §7.5).
let local: Harness;
let listed: Harness;
const APP = "https://app.example.org";

beforeAll(async () => {
  [local, listed] = await Promise.all([
    createHarness(),
    createHarness({ CORS_ORIGINS: `${APP}, https://admin.example.org` }),
  ]);
  for (const h of [local, listed]) await h.bus.serve(UsersRpc.count, async () => 4);
});
afterAll(() => Promise.all([local.close(), listed.close()]));

const routes = [
  ["GET", "/user/get"],
  ["POST", "/Authentication/Login"],
  ["PUT", "/User/Update/"],
  ["PATCH", "/user/updaterole/0x5B38Da6a701c568545dCfcB03FcB875f56beddC4/Viewer"],
  ["DELETE", "/user/deleteuser/5"],
] as const;

const preflight = (h: Harness, url: string, method: string, origin: string) =>
  h.app.inject({
    method: "OPTIONS",
    url,
    headers: {
      origin,
      "access-control-request-method": method,
      "access-control-request-headers": "authorization,content-type",
    },
  });

describe("CORS", () => {
  it.each(routes)("allows a preflight for %s %s with Authorization and Content-Type", async (method, url) => {
    for (const [h, origin] of [
      [local, "http://localhost:3000"],
      [listed, APP],
    ] as const) {
      const res = await preflight(h, url, method, origin);
      expect(res.statusCode).toBe(204);
      expect(res.headers["access-control-allow-origin"]).toBe(origin);
      expect(res.headers["access-control-allow-methods"]).toBe("GET, POST, PUT, PATCH, DELETE");
      expect(res.headers["access-control-allow-headers"]).toBe(
        "Authorization, Content-Type, X-Request-Id, Idempotency-Key",
      );
      expect(res.headers["access-control-max-age"]).toBe("600");
      expect(res.headers.vary).toContain("Origin");
    }
  });

  it("gives an origin that CORS_ORIGINS does not list no permission", async () => {
    const res = await preflight(listed, "/User/Update", "PUT", "https://evil.example.com");
    expect(res.headers["access-control-allow-origin"]).toBeUndefined();
    const get = await listed.app.inject({
      url: "/user/learnusercount",
      headers: { origin: "https://evil.example.com" },
    });
    expect(get.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("lets a listed origin read the answer and its request id and error code", async () => {
    const res = await listed.app.inject({ url: "/user/learnusercount", headers: { origin: APP } });
    expect(res.statusCode).toBe(200);
    expect(res.headers["access-control-allow-origin"]).toBe(APP);
    expect(res.headers["access-control-expose-headers"]).toBe("x-request-id, x-error-code, x-indexed-block");
  });

  it("answers a bare OPTIONS (no Origin) with 204, not a plain-text 400", async () => {
    const res = await local.app.inject({ method: "OPTIONS", url: "/user/update" });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe("");
  });
});
