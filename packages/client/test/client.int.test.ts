// The typed calls against the real gateway app (its test harness: the in-memory bus, the local Redis, the
// IPFS stand-in), listening on a loopback port; the RPCs behind the routes are served by this file.
import { createHarness, type Harness, userOf } from "@fundraise/gateway/src/test/harness.ts";
import { projectDto } from "@fundraise/gateway/src/test/route-samples.ts";
import { AuthRpc, ErrorCode, errors, ProjectsRpc, UsersRpc } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it, vi } from "vitest";
import { ApiError, createClient, type ProjectDTO, type UserDTO } from "../src/index.ts";

const ADDRESS = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4";
let h: Harness;
let baseUrl: string;
let token: string;
const seen: Record<string, unknown> = {};
/** How often a write or read of a name or id ran. */
const runs = new Map<string, number>();
/** Ends the first run of a "slow" add (it waits for the test). */
let finishSlow: (() => void) | undefined;

beforeAll(async () => {
  h = await createHarness({ AUTH_RATE_LIMIT_PER_MINUTE: "1000" });
  token = await h.signer.sign({ userId: 7, role: "Base", username: "ada" });
  await h.bus.serve(UsersRpc.count, async () => 3);
  await h.bus.serve(UsersRpc.get, async ({ caller }) => userOf(caller));
  await h.bus.serve(AuthRpc.nonce, async () => 123456);
  await h.bus.serve(AuthRpc.login, async ({ login }) => {
    seen.login = login;
    return token;
  });
  await h.bus.serve(ProjectsRpc.list, async () => [projectDto(1), projectDto(2)]);
  await h.bus.serve(ProjectsRpc.get, async ({ id }) => {
    if (id === 404) throw errors.notFound(ErrorCode.PROJECT_NOT_FOUND, "No such project.");
    // A service away for its first two reads of this id.
    if (id >= 500 && (runs.set(`get ${id}`, (runs.get(`get ${id}`) ?? 0) + 1).get(`get ${id}`) ?? 0) <= 2) {
      throw errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, "The projects service is not available.");
    }
    return projectDto(id);
  });
  await h.bus.serve(ProjectsRpc.add, async ({ project }) => {
    seen.add = project;
    const name = project.projectName;
    const run = (runs.get(name) ?? 0) + 1;
    runs.set(name, run);
    if (name === "taken") {
      throw errors.conflict(ErrorCode.PROJECT_NAME_TAKEN, "A project with this name exists.");
    }
    // "flaky N": the service is away for the first N runs (a 503 that did nothing).
    if (name.startsWith("flaky") && run <= Number(name.split(" ")[1])) {
      throw errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, "The projects service is not available.");
    }
    // "slow": the first run waits for the test (`finishSlow`), while copies of the call arrive.
    if (name.startsWith("slow") && run === 1) {
      await new Promise<void>((resolve) => {
        finishSlow = resolve;
      });
    }
    return projectDto(name === "slow 1" || name.startsWith("flaky") ? 100 + run : 9, { projectName: name });
  });
  const address = await h.app.listen({ port: 0, host: "127.0.0.1" });
  baseUrl = address;
});
afterAll(() => h.close());

describe("calls: the envelope's data, typed by the path", () => {
  it("an anonymous call answers data", async () => {
    const client = createClient({ baseUrl });
    const count = await client.GET("/user/learnusercount");
    expectTypeOf(count).toEqualTypeOf<number | null>();
    expect(count).toBe(3);
  });

  it("sign-in: GetNonce and Login, then setToken signs the later calls", async () => {
    const client = createClient({ baseUrl: `${baseUrl}/` });
    const nonce = await client.GET("/Authentication/GetNonce/{address}", {
      params: { path: { address: ADDRESS } },
    });
    expect(nonce).toBe(123456);
    const jwt = await client.POST("/Authentication/Login", {
      body: { address: ADDRESS, signedMessage: `signature of LOGIN: ${nonce}` },
    });
    expectTypeOf(jwt).toEqualTypeOf<string | null>();
    expect(seen.login).toEqual({ address: ADDRESS, signedMessage: "signature of LOGIN: 123456" });
    client.setToken(jwt);
    expect(client.token).toBe(token);
    const me = await client.GET("/user/get");
    expectTypeOf(me).toEqualTypeOf<UserDTO | null>();
    expect(me).toMatchObject({ id: 7, username: "ada", role: "Base", invitations: [] });
  });

  it("lists and one project, path and query parameters typed", async () => {
    const client = createClient({ baseUrl });
    const all = await client.GET("/Project/Get/All", { params: { query: { withHex: false } } });
    expectTypeOf(all).toEqualTypeOf<ProjectDTO[] | null>();
    expect(all?.map((p) => p.projectID)).toEqual([1, 2]);
    const one = await client.GET("/Project/Get/{id}", { params: { path: { id: 5 } } });
    expect(one).toEqual(projectDto(5));
    // @ts-expect-error: the path parameter is required
    await expect(client.GET("/Project/Get/{id}")).rejects.toMatchObject({ status: 400 });
    // @ts-expect-error: no such route in the document
    await expect(client.GET("/Project/Nothing")).rejects.toMatchObject({ status: 404 });
  });

  it("Add with a small file: the body typed, 201's data the ProjectDTO", async () => {
    const client = createClient({ baseUrl, token });
    const fileHex = Buffer.from("%PDF-1.4 a small whitepaper").toString("hex");
    const added = await client.POST("/Project/Add", {
      body: { projectName: "Solar roofs", projectDescription: "Roofs that pay", fileHex },
    });
    expectTypeOf(added).toEqualTypeOf<ProjectDTO | null>();
    expect(added).toMatchObject({ projectID: 9, projectName: "Solar roofs" });
    expect(seen.add).toMatchObject({ projectName: "Solar roofs", projectDescription: "Roofs that pay" });
    // @ts-expect-error: projectName is required
    await expect(client.POST("/Project/Add", { body: { fileHex } })).rejects.toMatchObject({ status: 400 });
  });

  it("a route without the envelope (the JWKS) answers its body as it is", async () => {
    const jwks = await createClient({ baseUrl }).GET("/.well-known/jwks.json");
    expect(jwks.keys).toEqual(h.signer.jwks.keys);
  });
});

describe("errors: one ApiError with the status, the envelope's message, the code and the body", () => {
  it("401 without a token; setToken(null) signs out", async () => {
    const client = createClient({ baseUrl, token });
    client.setToken(null);
    const error = await client.GET("/user/get").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({
      name: "ApiError",
      status: 401,
      code: ErrorCode.TOKEN_MISSING,
      body: { data: null, success: false },
    });
    expect((error as ApiError).message).toBe(
      (error as ApiError & { body: { message: string } }).body.message,
    );
  });

  it("404 and 409 from the services keep their codes", async () => {
    const client = createClient({ baseUrl, token });
    await expect(client.GET("/Project/Get/{id}", { params: { path: { id: 404 } } })).rejects.toMatchObject({
      status: 404,
      code: ErrorCode.PROJECT_NOT_FOUND,
      message: "No such project.",
    });
    const fileHex = Buffer.from("another whitepaper").toString("hex");
    await expect(
      client.POST("/Project/Add", { body: { projectName: "taken", fileHex } }),
    ).rejects.toMatchObject({ status: 409, code: ErrorCode.PROJECT_NAME_TAKEN });
  });

  it("a call's own Authorization header wins over the token", async () => {
    const client = createClient({ baseUrl, token });
    await expect(
      client.GET("/user/get", { headers: { authorization: "Bearer undefined" } }),
    ).rejects.toMatchObject({
      status: 401,
    });
  });

  it("an answer that is not the envelope (a proxy's page): the status and the text", async () => {
    const client = createClient({
      baseUrl,
      fetch: async () =>
        new Response("<html>Bad Gateway</html>", {
          status: 502,
          statusText: "Bad Gateway",
          headers: { "content-type": "text/html" },
        }),
    });
    await expect(client.GET("/user/learnusercount")).rejects.toMatchObject({
      status: 502,
      message: "HTTP 502 Bad Gateway",
      code: undefined,
      body: "<html>Bad Gateway</html>",
    });
  });

  it("a 2xx envelope with success false is an error too", async () => {
    const client = createClient({
      baseUrl,
      fetch: async () => Response.json({ data: null, success: false, message: "Refused." }),
    });
    await expect(client.GET("/user/learnusercount")).rejects.toMatchObject({
      status: 200,
      message: "Refused.",
    });
  });

  it("headers and fetch options reach every call", async () => {
    const sent: Request[] = [];
    const client = createClient({
      baseUrl,
      headers: { "x-request-id": "client-test-1" },
      fetch: (request) => {
        sent.push(request);
        return fetch(request);
      },
    });
    await client.GET("/user/learnusercount");
    expect(sent[0]?.headers.get("x-request-id")).toBe("client-test-1");
    const raw = await client.raw.GET("/user/learnusercount");
    expect(raw.response.headers.get("x-request-id")).toBe("client-test-1");
    expect(raw.data).toEqual({ data: 3, success: true, message: null });
  });
});

describe("sending a call again (retry)", () => {
  /** A client whose sends are recorded, with short waits between them. */
  const recording = (extra: Parameters<typeof createClient>[0] = { baseUrl }) => {
    const sent: Request[] = [];
    const client = createClient({
      token,
      retry: { delayMs: 10 },
      ...extra,
      fetch: (request) => {
        sent.push(request.clone());
        return fetch(request);
      },
    });
    return { client, sent };
  };
  const fileHex = Buffer.from("a whitepaper").toString("hex");

  it("sends a write again after 503s with one Idempotency-Key: done once, its answer", async () => {
    const { client, sent } = recording();
    const project = await client.POST("/Project/Add", { body: { projectName: "flaky 2", fileHex } });
    expect(project?.projectName).toBe("flaky 2");
    expect(runs.get("flaky 2")).toBe(3);
    const keys = sent.map((request) => request.headers.get("idempotency-key"));
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("a copy of a write under way (409 IDEMPOTENCY_KEY_IN_USE) waits for it and answers its first answer", async () => {
    const a = recording();
    const b = recording({ baseUrl, retry: { attempts: 10, delayMs: 50 } });
    const headers = { "idempotency-key": `slow-${Date.now()}` };
    const first = a.client.POST("/Project/Add", { body: { projectName: "slow 1", fileHex }, headers });
    // Conditions, not a fixed wait: the first is under way (its run holds the key), and the copy was
    // refused once (it sent again) before the first finishes.
    await vi.waitFor(() => expect(runs.get("slow 1")).toBe(1), { timeout: 10_000 });
    const copying = b.client.POST("/Project/Add", { body: { projectName: "slow 1", fileHex }, headers });
    await vi.waitFor(() => expect(b.sent.length).toBeGreaterThan(1), { timeout: 10_000 });
    finishSlow?.();
    const copy = await copying;
    expect(copy).toEqual(await first);
    expect(runs.get("slow 1")).toBe(1);
    expect(b.sent.length).toBeGreaterThan(1);
  });

  it("sends a read again after 503s", async () => {
    const { client, sent } = recording();
    expect(await client.GET("/Project/Get/{id}", { params: { path: { id: 501 } } })).toMatchObject({
      projectID: 501,
    });
    expect(sent).toHaveLength(3);
  });

  it("gives up after its attempts, and never sends a refusal again", async () => {
    const { client, sent } = recording({ baseUrl, retry: { attempts: 2, delayMs: 10 } });
    await expect(
      client.POST("/Project/Add", { body: { projectName: "flaky 5", fileHex } }),
    ).rejects.toMatchObject({
      status: 503,
    });
    expect(sent).toHaveLength(2);
    await expect(
      client.POST("/Project/Add", { body: { projectName: "taken", fileHex } }),
    ).rejects.toMatchObject({
      status: 409,
      code: ErrorCode.PROJECT_NAME_TAKEN,
    });
    expect(sent).toHaveLength(3);
  });

  it("never sends a call again once its caller aborted it", async () => {
    const { client, sent } = recording();
    const controller = new AbortController();
    controller.abort();
    await expect(
      client.POST("/Project/Add", { body: { projectName: "flaky 1", fileHex }, signal: controller.signal }),
    ).rejects.toMatchObject({ name: "AbortError" });
    expect(sent.length).toBeLessThanOrEqual(1);
  });

  it("a call aborted while it waits to be sent again ends at once", async () => {
    // A wait of ten minutes (the gateway's Retry-After taken away): were it not cut short, the test would
    // run out of time.
    const sent: Request[] = [];
    const client = createClient({
      baseUrl,
      token,
      retry: { attempts: 3, delayMs: 600_000, maxDelayMs: 600_000 },
      fetch: async (request) => {
        sent.push(request);
        const res = await fetch(request);
        const headers = new Headers(res.headers);
        headers.delete("retry-after");
        return new Response(res.body, { status: res.status, headers });
      },
    });
    const controller = new AbortController();
    const call = client.POST("/Project/Add", {
      body: { projectName: "flaky 9", fileHex },
      signal: controller.signal,
    });
    await vi.waitFor(() => expect(sent).toHaveLength(1));
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort();
    await expect(call).rejects.toMatchObject({ name: "AbortError" });
    expect(sent).toHaveLength(1);
  });

  it("retry: false sends once and adds no key; sign-in gets no key of the client's", async () => {
    const { client, sent } = recording({ baseUrl, retry: false });
    await expect(
      client.POST("/Project/Add", { body: { projectName: "flaky 1", fileHex } }),
    ).rejects.toMatchObject({
      status: 503,
    });
    expect(sent).toHaveLength(1);
    expect(sent[0]?.headers.get("idempotency-key")).toBeNull();
    const keyed = recording();
    await keyed.client.POST("/Authentication/Login", {
      body: { address: ADDRESS, signedMessage: "signature of LOGIN: 123456" },
    });
    expect(keyed.sent[0]?.headers.get("idempotency-key")).toBeNull();
  });
});
