import { timeOfId } from "@fundraise/bus";
import { AuthRpc, UsersRpc } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../test/harness.ts";

// Each answered request leaves one journal entry, the root of its story: route pattern, status, duration,
// and never what identifies the caller or what they sent.
let h: Harness;

beforeAll(async () => {
  h = await createHarness();
  await h.bus.serve(UsersRpc.count, async () => 3);
  await h.bus.serve(AuthRpc.verifyEmail, async () => "Your e-mail is verified.");
});
afterAll(() => h.close());

const noteOf = (requestId: string) => h.bus.notes.find((note) => note.requestId === requestId);

describe("the gateway's journal of requests", () => {
  it("records method, route pattern, status and duration under a time-ordered request id", async () => {
    const before = Date.now();
    const res = await h.app.inject({ method: "GET", url: "/User/LearnUserCount" });
    const requestId = String(res.headers["x-request-id"]);
    expect(timeOfId(requestId)).toBeGreaterThanOrEqual(before - 1);
    expect(noteOf(requestId)).toMatchObject({
      kind: "http",
      id: `http:${requestId}`,
      name: "GET /user/learnusercount",
      summary: { method: "GET", route: "/user/learnusercount", status: 200, durationMs: expect.any(Number) },
    });
  });

  it("keeps a caller's own request id, which carries no time", async () => {
    const res = await h.app.inject({
      method: "GET",
      url: "/user/learnusercount",
      headers: { "x-request-id": "client-42" },
    });
    expect(res.headers["x-request-id"]).toBe("client-42");
    expect(noteOf("client-42")).toMatchObject({ summary: { status: 200 } });
  });

  it("keeps neither the query string nor the client's address: a verification link's e-mail and token stay out", async () => {
    const res = await h.app.inject({
      method: "GET",
      url: "/Authentication/verify-email?email=someone%40example.org&token=secret-token",
      headers: { "x-forwarded-for": "198.18.7.7" },
    });
    const note = noteOf(String(res.headers["x-request-id"]));
    expect(note?.name).toBe("GET /Authentication/verify-email");
    expect(JSON.stringify(note)).not.toMatch(/someone|secret-token|198\.18\.7\.7/);
  });

  it("records a request no route matches, and leaves probes out", async () => {
    const missing = await h.app.inject({ method: "GET", url: "/no/such/route?mail=a@b.org" });
    expect(noteOf(String(missing.headers["x-request-id"]))).toMatchObject({
      name: "GET (no route)",
      summary: { route: null, status: 404 },
    });
    const probe = await h.app.inject({ method: "GET", url: "/healthz" });
    expect(noteOf(String(probe.headers["x-request-id"]))).toBeUndefined();
  });
});
