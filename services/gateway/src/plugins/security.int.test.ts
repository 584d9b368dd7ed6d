import helmet from "@fastify/helmet";
import { AuthRpc, ErrorCode, errors, UsersRpc } from "@fundraise/protocol";
import Fastify from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../test/harness.ts";
import { adminToken, authHeaders, captureAllRpcs, fillQuery, fillUrl } from "../test/route-samples.ts";
import { docsCsp } from "./openapi.ts";
import { API_CSP, SECURITY_HEADERS } from "./security.ts";

// Security headers (rules.md §7.6) and the Cache-Control rule of docs/adr/0008-gateway-sessions-and-edge.md.
let h: Harness;
let token: string;
const ADDRESS = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4";

beforeAll(async () => {
  h = await createHarness({ AUTH_RATE_LIMIT_PER_MINUTE: "1000" });
  token = await h.signer.sign({ userId: 12, role: "Admin", username: "ada" });
  const user = {
    id: 12,
    name: "Ada",
    surname: "Lovelace",
    address: ADDRESS,
    mailAddress: "ada@example.org",
    username: "ada",
    role: "Admin" as const,
    invitations: [],
  };
  await h.bus.serve(AuthRpc.nonce, async () => 12345678);
  await h.bus.serve(AuthRpc.login, async () => "a.jwt.token");
  await h.bus.serve(AuthRpc.register, async () => "12");
  await h.bus.serve(AuthRpc.verifyEmail, async ({ token: t }) => {
    if (t === "expired") throw errors.gone(ErrorCode.VERIFICATION_LINK_EXPIRED, "The link has expired.");
    return "Your e-mail is verified.";
  });
  await h.bus.serve(UsersRpc.get, async () => user);
  await h.bus.serve(UsersRpc.list, async () => [user]);
  await h.bus.serve(UsersRpc.update, async () => user);
  await h.bus.serve(UsersRpc.count, async () => 1);
});
afterAll(() => h.close());

const bearer = () => ({ authorization: `Bearer ${token}` });

describe("security headers", () => {
  it("are exactly what helmet sends for a CSP that allows nothing and frame denial, on every answer", async () => {
    const reference = Fastify();
    await reference.register(helmet, {
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          defaultSrc: ["'none'"],
          baseUri: ["'none'"],
          formAction: ["'none'"],
          frameAncestors: ["'none'"],
        },
      },
      frameguard: { action: "deny" },
    });
    reference.get("/", async () => "x");
    const expected = (await reference.inject("/")).headers;
    await reference.close();
    for (const name of Object.keys(expected)) {
      if (["content-type", "content-length", "date", "connection"].includes(name)) continue;
      expect(SECURITY_HEADERS[name], name).toBe(expected[name]);
    }
    for (const url of ["/user/learnusercount", "/nothing/here"]) {
      const res = await h.app.inject(url);
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) {
        expect(res.headers[name], `${url} ${name}`).toBe(value);
      }
    }
  });

  it("sends nosniff, frame denial and a CSP that allows nothing on API answers, errors included", async () => {
    for (const url of ["/user/learnusercount", "/user/get", "/nothing/here", "/Project/Get/abc"]) {
      const res = await h.app.inject(url);
      expect(res.headers["x-content-type-options"], url).toBe("nosniff");
      expect(res.headers["x-frame-options"], url).toBe("DENY");
      expect(res.headers["content-security-policy"], url).toBe(API_CSP);
    }
  });

  it("serves the verify-email page with that CSP (no script, frame-ancestors 'none') and no-store", async () => {
    for (const t of ["good", "expired"]) {
      const res = await h.app.inject({
        url: `/Authentication/verify-email?email=a@b.org&token=${t}`,
        headers: { accept: "text/html" },
      });
      expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
      expect(res.headers["content-security-policy"]).toBe(
        "default-src 'none';base-uri 'none';form-action 'none';frame-ancestors 'none'",
      );
      expect(res.headers["x-frame-options"]).toBe("DENY");
      expect(res.headers["cache-control"]).toBe("no-store");
      expect(res.body).not.toContain("<script");
    }
  });

  it("serves the API docs under a CSP that lets Swagger UI load, and nothing else", async () => {
    const page = await h.app.inject("/docs");
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.headers["content-security-policy"]).toBe(docsCsp("http://localhost:8080"));
    expect(page.headers["x-frame-options"]).toBe("DENY");
    // script-src 'self' and no 'unsafe-inline': every script is a same-origin file, none inline.
    expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
    expect(assets.length).toBeGreaterThanOrEqual(5);
    for (const asset of assets) {
      expect(asset, "same origin").toMatch(/^\/docs\/static\//);
      const res = await h.app.inject(asset);
      expect(res.statusCode, asset).toBe(200);
      expect(res.body.length, asset).toBeGreaterThan(0);
    }
    const initializer = await h.app.inject("/docs/static/swagger-initializer.js");
    expect(initializer.headers["content-type"]).toBe("application/javascript; charset=utf-8");
    const doc = await h.app.inject("/docs/json");
    expect(doc.statusCode).toBe(200);
    expect(doc.json()).toMatchObject({ openapi: "3.0.3" });
  });
});

describe("Cache-Control", () => {
  type Sent = Promise<{ statusCode: number; headers: Record<string, unknown> }>;
  const signIn: [string, () => Sent, number][] = [
    ["GetNonce", () => h.app.inject(`/Authentication/GetNonce/${ADDRESS}`), 200],
    [
      "Login",
      () =>
        h.app.inject({
          method: "POST",
          url: "/Authentication/Login",
          payload: { address: ADDRESS, signedMessage: "0x00" },
        }),
      200,
    ],
    [
      "Register",
      () =>
        h.app.inject({
          method: "POST",
          url: "/Authentication/Register",
          payload: { name: "A", surname: "L", username: "ada", mailAddress: "a@b.org", signedMessage: "0x" },
        }),
      201,
    ],
    ["verify-email", () => h.app.inject("/Authentication/verify-email?email=a@b.org&token=good"), 200],
    [
      "verify-email, expired",
      () => h.app.inject("/Authentication/verify-email?email=a@b.org&token=expired"),
      410,
    ],
    ["/user/get", () => h.app.inject({ url: "/user/get", headers: bearer() }), 200],
    ["/user/get, no token", () => h.app.inject("/user/get"), 401],
    ["/user/getall", () => h.app.inject({ url: "/user/getall", headers: bearer() }), 200],
    [
      "/user/update",
      () => h.app.inject({ method: "PUT", url: "/user/update", headers: bearer(), payload: { name: "Ada" } }),
      200,
    ],
    ["learnusercount", () => h.app.inject("/user/learnusercount"), 200],
    ["/readyz", () => h.app.inject("/readyz"), 200],
  ];

  it.each(signIn)("is no-store on %s", async (_name, send, status) => {
    const res = await send();
    expect(res.statusCode).toBe(status);
    expect(res.headers["cache-control"]).toBe("no-store");
  });

  it("lets the public JWKS be cached for a minute", async () => {
    const res = await h.app.inject("/.well-known/jwks.json");
    expect(res.statusCode).toBe(200);
    expect(res.headers["cache-control"]).toBe("public, max-age=60");
  });

  it("is no-store on every other route of the route table", async () => {
    const other = await createHarness({
      RATE_LIMIT_PER_MINUTE: "1000000",
      AUTH_RATE_LIMIT_PER_MINUTE: "1000000",
    });
    try {
      await captureAllRpcs(other);
      const admin = await adminToken(other);
      const routes = other.app.routeTable.filter((r) => r.access !== undefined);
      expect(routes.length).toBeGreaterThan(30);
      for (const route of routes) {
        const res = await other.app.inject({
          method: route.method as "GET",
          url: fillUrl(route) + fillQuery(route),
          headers: authHeaders(route, admin),
        });
        const expected = route.url === "/.well-known/jwks.json" ? "public, max-age=60" : "no-store";
        expect(res.headers["cache-control"], `${route.method} ${route.url}`).toBe(expected);
      }
    } finally {
      await other.close();
    }
  });
});
