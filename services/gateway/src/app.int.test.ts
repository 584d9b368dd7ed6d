import { fileHashOf } from "@fundraise/ipfs";
import {
  AuthRpc,
  ChainRpc,
  type ContentRef,
  ErrorCode,
  errors,
  ProjectsRpc,
  UsersRpc,
} from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, userOf } from "./test/harness.ts";

// The gateway on the in-memory bus and a real Redis: HTTP rules only; the bus has its own suites.
let h: Harness;
const seen: Record<string, unknown> = {};

beforeAll(async () => {
  h = await createHarness({ AUTH_RATE_LIMIT_PER_MINUTE: "1000" });
  await h.bus.serve(UsersRpc.count, async () => 0);
  await h.bus.serve(UsersRpc.get, async ({ caller }) => userOf(caller));
  await h.bus.serve(UsersRpc.list, async () => []);
  await h.bus.serve(AuthRpc.login, async (request) => {
    seen.login = request.login;
    return "a.jwt.token";
  });
  await h.bus.serve(AuthRpc.verifyEmail, async ({ token }) => {
    if (token === "expired") throw errors.gone(ErrorCode.VERIFICATION_LINK_EXPIRED, "The link has expired.");
    return "Your e-mail is verified.";
  });
  await h.bus.serve(ProjectsRpc.invite, async (request) => {
    seen.invite = request.request;
    return "7";
  });
  await h.bus.serve(ProjectsRpc.add, async (request) => {
    seen.add = request.project;
    throw errors.conflict(ErrorCode.PROJECT_NAME_TAKEN, "A project with this name exists.");
  });
  // A stand-in for the projects service's releases: no project holds anything here.
  await h.bus.serve(ProjectsRpc.releaseContent, async ({ fileHashes }) => {
    seen.released = fileHashes;
    return { released: fileHashes.map((fileHash, i) => ({ fileHash, version: i + 1 })), held: [] };
  });
  await h.bus.serve(ProjectsRpc.confirmRelease, async ({ releases }) => {
    seen.confirmed = releases;
    return null;
  });
});
afterAll(() => h.close());

const get = (url: string, headers: Record<string, string> = {}) =>
  h.app.inject({ method: "GET", url, headers });

describe("wire format", () => {
  it("serves learnusercount as the envelope, case-insensitively, with or without a trailing slash", async () => {
    for (const url of ["/user/learnusercount", "/User/LearnUserCount/", "/USER/LEARNUSERCOUNT"]) {
      const res = await get(url);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ data: 0, success: true, message: null });
    }
  });

  it("matches body fields case-insensitively and passes them on under the schema's names", async () => {
    const res = await h.app.inject({
      method: "POST",
      url: "/authentication/login",
      payload: { Address: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4", SIGNEDMESSAGE: "0xabc", extra: 1 },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: "a.jwt.token", success: true, message: null });
    expect(seen.login).toMatchObject({
      address: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
      signedMessage: "0xabc",
    });
  });

  it("accepts numbers sent as strings and answers 201 where something was created", async () => {
    const token = await h.signer.sign({ userId: 3, role: "Base" });
    const res = await h.app.inject({
      method: "PUT",
      url: "/User/Invite/",
      headers: { authorization: `Bearer ${token}` },
      payload: { projectID: "5", Username: "bob", Role: "Co-Owner" },
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({ data: "7", success: true, message: null });
    expect(seen.invite).toEqual({ projectID: 5, username: "bob", role: "Co-Owner" });
  });

  it("decodes the project file from hex at the edge, adds it to IPFS pinned, maps a conflict to 409 and releases the content", async () => {
    const token = await h.signer.sign({ userId: 3, role: "Base" });
    const res = await h.app.inject({
      method: "POST",
      url: "/Project/Add",
      headers: { authorization: `Bearer ${token}` },
      payload: { projectName: "P", projectDescription: "d", fileHex: "68656c6c6f" },
    });
    expect(res.statusCode).toBe(409);
    expect(res.headers["x-error-code"]).toBe("PROJECT_NAME_TAKEN");
    expect(res.json()).toEqual({ data: null, success: false, message: "A project with this name exists." });
    const { content } = seen.add as { content: ContentRef };
    expect(content).toMatchObject({ fileBytes: 5, imageBytes: null });
    expect(await h.ipfs.hexOf(content)).toEqual({ whitepaper: "68656c6c6f" });
    // The write was refused: its content is released and unpinned at once, the release confirmed.
    await expect.poll(() => h.ipfs.pinned(content.cid)).toBe(false);
    expect(seen.released).toEqual([fileHashOf(content.cid)]);
    await expect.poll(() => seen.confirmed).toEqual([{ fileHash: fileHashOf(content.cid), version: 1 }]);
  });
});

describe("bad input never reaches a service and never gives a 500", () => {
  const cases: [
    string,
    () => Promise<{ statusCode: number; json(): unknown; headers: Record<string, unknown> }>,
    number,
  ][] = [
    [
      "malformed JSON",
      () =>
        h.app.inject({
          method: "POST",
          url: "/Authentication/Login",
          headers: { "content-type": "application/json" },
          payload: '{"address": ',
        }),
      400,
    ],
    [
      "a wrong type",
      () =>
        h.app.inject({
          method: "POST",
          url: "/Authentication/Login",
          payload: { address: { a: 1 }, signedMessage: "x" },
        }),
      400,
    ],
    [
      "a 2 MB body",
      () =>
        h.app.inject({
          method: "POST",
          url: "/Authentication/Login",
          payload: { address: "x".repeat(2_000_000), signedMessage: "x" },
        }),
      413,
    ],
    ["an unknown route", () => get("/nothing/here"), 404],
    ["a malformed address", () => get("/Authentication/GetNonce/0x123"), 400],
    ["a non-numeric id", () => get("/Project/Get/abc"), 400],
    ["an unknown status", () => get("/Project/GetByStatus/Sleeping"), 400],
    [
      "bad hex in a project",
      async () =>
        h.app.inject({
          method: "POST",
          url: "/Project/Add",
          headers: { authorization: `Bearer ${await h.signer.sign({ userId: 3, role: "Base" })}` },
          payload: { projectName: "P", fileHex: "zz" },
        }),
      400,
    ],
    [
      "a prototype-poisoning body",
      () =>
        h.app.inject({
          method: "POST",
          url: "/Authentication/Login",
          headers: { "content-type": "application/json" },
          payload: '{"__proto__": {"x": 1}, "address": null, "signedMessage": null}',
        }),
      400,
    ],
  ];
  it.each(cases)("%s → %s in the envelope", async (_name, send, status) => {
    const res = await send();
    expect(res.statusCode).toBe(status);
    expect(res.json()).toMatchObject({ data: null, success: false, message: expect.any(String) });
  });
});

describe("event-debug answers", () => {
  it("keep rules.md §5.2's shapes and say how far the chain is indexed in X-Indexed-Block", async () => {
    const log = {
      event: { user: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4" },
      log: {
        address: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
        blockHash: `0x${"ab".repeat(32)}`,
        blockNumber: 40,
        transactionHash: `0x${"cd".repeat(32)}`,
        transactionIndex: 0,
        logIndex: 2,
        removed: false,
      },
    };
    const served = await createHarness();
    try {
      await served.bus.serve(ChainRpc.whitelistInsertLogs, async () => ({ logs: [log], indexedBlock: 42 }));
      await served.bus.serve(ChainRpc.whitelisted, async () => ({ whitelisted: true, indexedBlock: 43 }));
      const logs = await served.app.inject("/EventDebug/DebugAdd/0x5B38Da6a701c568545dCfcB03FcB875f56beddC4");
      expect(logs.json()).toEqual({ data: [log], success: true, message: null });
      expect(logs.headers["x-indexed-block"]).toBe("42");
      const flag = await served.app.inject(
        "/EventDebug/Whitelisted/0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
      );
      expect(flag.json()).toEqual({ data: true, success: true, message: null });
      expect(flag.headers["x-indexed-block"]).toBe("43");
      // Browsers may read it across origins.
      const cors = await served.app.inject({
        url: "/EventDebug/Whitelisted/0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
        headers: { origin: "https://app.example.org" },
      });
      expect(String(cors.headers["access-control-expose-headers"])).toContain("x-indexed-block");
    } finally {
      await served.close();
    }
  });
});

describe("dependencies", () => {
  it("answers 503 in the envelope when the service behind a route is not running", async () => {
    const res = await get("/EventDebug/Debug");
    expect(res.statusCode).toBe(503);
    expect(res.headers["x-error-code"]).toBe("SERVICE_UNAVAILABLE");
    expect(res.json()).toMatchObject({ success: false, data: null });
  });

  it("answers 504 when the service does not answer in time", async () => {
    await h.bus.serve(ChainRpc.whitelisted, () => new Promise(() => {}));
    const started = Date.now();
    const res = await get("/EventDebug/Whitelisted/0x5B38Da6a701c568545dCfcB03FcB875f56beddC4");
    expect(res.statusCode).toBe(504);
    expect(res.headers["x-error-code"]).toBe("RPC_TIMEOUT");
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});

describe("tokens and access", () => {
  it("treats `Bearer undefined` as anonymous on an open route and as 401 on a signed-in route", async () => {
    for (const bearer of ["Bearer undefined", "Bearer null", "Bearer "]) {
      expect((await get("/user/learnusercount", { authorization: bearer })).statusCode).toBe(200);
      const res = await get("/user/get", { authorization: bearer });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toMatchObject({ success: false });
    }
  });

  it("passes the verified caller to the service", async () => {
    const token = await h.signer.sign({ userId: 42, role: "Whitelist", username: "ada" });
    const res = await get("/user/get", { authorization: `Bearer ${token}` });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ id: 42, username: "ada", role: "Whitelist" });
  });

  it("gives 403 to a signed-in caller without the route's role, 200 to an admin", async () => {
    const base = await h.signer.sign({ userId: 1, role: "Base" });
    const admin = await h.signer.sign({ userId: 2, role: "Admin" });
    expect((await get("/user/getall", { authorization: `Bearer ${base}` })).statusCode).toBe(403);
    expect((await get("/user/getall", { authorization: `Bearer ${admin}` })).statusCode).toBe(200);
  });

  it("refuses forged, expired, foreign and unsigned tokens with 401", async () => {
    const valid = await h.signer.sign({ userId: 5, role: "Base" });
    const [header, payload] = valid.split(".");
    const claims = JSON.parse(Buffer.from(payload ?? "", "base64url").toString());
    const tampered = `${header}.${Buffer.from(JSON.stringify({ ...claims, role: "Admin" })).toString("base64url")}.${valid.split(".")[2]}`;
    const none = `${Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url")}.${payload}.`;
    const other = await (await import("./test/harness.ts")).createTestSigner();
    const foreign = await other.sign({ userId: 5, role: "Admin" });
    const expired = await h.signer.sign(
      { userId: 5, role: "Base" },
      { expiresIn: Math.floor(Date.now() / 1000) - 60, issuedAt: Math.floor(Date.now() / 1000) - 3600 },
    );
    const wrongAudience = await h.signer.sign({ userId: 5, role: "Base" }, { audience: "someone-else" });
    for (const token of [tampered, none, foreign, expired, wrongAudience, "garbage"]) {
      const res = await get("/user/get", { authorization: `Bearer ${token}` });
      expect(res.statusCode, token).toBe(401);
    }
  });

  it("applies the current role and revocations kept in Redis at once", async () => {
    const token = await h.signer.sign({ userId: 77, role: "Admin", sv: 4 });
    const later = await h.signer.sign({ userId: 77, role: "Admin", sv: 5 });
    expect((await get("/user/getall", { authorization: `Bearer ${token}` })).statusCode).toBe(200);
    await h.redis.hset(`${h.prefix}session:77`, { role: "Base", version: "4" });
    expect((await get("/user/getall", { authorization: `Bearer ${token}` })).statusCode).toBe(403);
    // An admin's change at version 5 refuses tokens issued at 4, not those issued at 5 (after it).
    await h.redis.hset(`${h.prefix}session:77`, { version: "5", revokedBelow: "5" });
    const res = await get("/user/get", { authorization: `Bearer ${token}` });
    expect(res.statusCode).toBe(401);
    expect(res.headers["x-error-code"]).toBe("TOKEN_REVOKED");
    expect((await get("/user/get", { authorization: `Bearer ${later}` })).statusCode).not.toBe(401);
    // A deleted account refuses every token of it, whatever its version.
    await h.redis.hset(`${h.prefix}session:77`, { deleted: "1" });
    const gone = await get("/user/get", { authorization: `Bearer ${later}` });
    expect(gone.statusCode).toBe(401);
    expect(gone.json().message).toBe("This account no longer exists.");
  });
});

describe("verify-email", () => {
  it("answers JSON clients with the envelope and browsers with a page that returns home", async () => {
    const json = await get("/Authentication/verify-email?email=a@b.org&token=good");
    expect(json.json()).toEqual({ data: "Your e-mail is verified.", success: true, message: null });
    const html = await get("/Authentication/verify-email?email=a@b.org&token=good", {
      accept: "text/html,*/*",
    });
    expect(html.statusCode).toBe(200);
    expect(html.headers["content-type"]).toContain("text/html");
    expect(html.body).toContain("Your e-mail is verified.");
    expect(html.body).toMatch(/http-equiv="refresh" content="3;url=http:\/\/localhost:8080"/);
    const expired = await get("/Authentication/verify-email?email=a@b.org&token=expired", {
      accept: "text/html",
    });
    expect(expired.statusCode).toBe(410);
    expect(expired.body).toContain("The link has expired.");
  });
});

describe("operations", () => {
  it("serves liveness and readiness without details, and no metrics on the public port", async () => {
    expect((await get("/healthz")).json()).toEqual({ data: "ok", success: true, message: null });
    const ready = await get("/readyz");
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ data: "ready", success: true, message: null });
    const metrics = await get("/metrics");
    expect(metrics.statusCode).toBe(404);
    expect(metrics.json()).toEqual({ data: null, success: false, message: "No route GET /metrics." });
  });

  it("serves the JWKS bare, as standard clients read it", async () => {
    const res = await get("/.well-known/jwks.json");
    expect(res.json()).toEqual(h.signer.jwks);
  });

  it("documents every route of the interface at /docs", async () => {
    expect((await get("/docs")).statusCode).toBeLessThan(400);
    const doc = (await get("/docs/json")).json() as { paths: Record<string, Record<string, unknown>> };
    const routes = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((m) => `${m.toUpperCase()} ${path.toLowerCase()}`),
    );
    const spec = [
      "POST /authentication/login",
      "POST /authentication/register",
      "GET /authentication/verify-email",
      "GET /authentication/getnonce/{address}",
      "GET /user/get",
      "PUT /user/update",
      "DELETE /user/delete",
      "DELETE /user/deleteuser/{id}",
      "POST /user/invite",
      "PUT /user/invitationreply",
      "GET /user/getall",
      "GET /user/learnusercount",
      "GET /user/getcoowners/{projectid}",
      "DELETE /user/removecollab",
      "PATCH /user/updaterole/{address}/{role}",
      "GET /project/get/all",
      "GET /project/get/{id}",
      "PUT /project/update",
      "DELETE /project/delete/{id}",
      "POST /project/add",
      "PUT /project/rate/{id}/{rating}",
      "GET /project/getbystatus/{status}",
      "PUT /project/changestatus/{id}",
      "PUT /project/updatemarkdown/{id}/{markdown}",
      "GET /project/getallpermissioned/{withhex}",
      "GET /project/getallinvitations",
      "GET /project/getprojects/{numberofprojects}",
      "GET /project/getallhashes/{areonlyauctionsstarted}",
      "PUT /project/viewerreply/{id}/{reply}",
      "GET /eventdebug/debug",
      "GET /eventdebug/debugremove/{address}",
      "GET /eventdebug/debugadd/{address}",
      "GET /eventdebug/whitelisted/{address}",
      "GET /project/viewerpage/getall",
      "PUT /project/createauction/{id}",
      "PUT /project/startauction/{id}",
    ];
    for (const route of spec) expect(routes, route).toContain(route);
  });
});

describe("rate limits", () => {
  it("answers 429 in the envelope past the per-IP limit of the sign-in routes", async () => {
    const strict = await createHarness({ AUTH_RATE_LIMIT_PER_MINUTE: "3" });
    try {
      await strict.bus.serve(AuthRpc.nonce, async () => 1);
      const codes: number[] = [];
      for (let i = 0; i < 5; i++) {
        codes.push(
          (await strict.app.inject("/Authentication/GetNonce/0x5B38Da6a701c568545dCfcB03FcB875f56beddC4"))
            .statusCode,
        );
      }
      expect(codes).toEqual([200, 200, 200, 429, 429]);
      const limited = await strict.app.inject(
        "/Authentication/GetNonce/0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
      );
      expect(limited.json()).toMatchObject({ success: false, data: null });
    } finally {
      await strict.close();
    }
  });
});
