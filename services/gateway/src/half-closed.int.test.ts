import { connect } from "node:net";
import { Writable } from "node:stream";
import { waitFor } from "@fundraise/bus/testing";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "./test/harness.ts";
import { adminToken, captureAllRpcs } from "./test/route-samples.ts";

// Clients that go away mid-request: the socket half-closed (`end()`) right after the request, or
// destroyed. The gateway once logged a TypeError from @fastify/rate-limit for them: the client's address
// was read after the socket had closed (the authentication hook awaits before the rate limit runs).
let h: Harness;
let port: number;
let token: string;
interface LogLine {
  level: number;
  msg?: string;
  requestId?: string;
  err?: { type?: string; message?: string };
}
const lines: LogLine[] = [];

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  h = await createHarness({}, undefined, { log: pino({ level: "debug" }, sink) });
  await captureAllRpcs(h);
  token = await adminToken(h);
  port = Number(new URL(await h.app.listen({ port: 0, host: "127.0.0.1" })).port);
});
afterAll(() => h.close());

/** Writes `request`, then half-closes the socket or destroys it; resolves once it closed. */
function goAway(request: string, how: "end" | "destroy"): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1", () => {
      socket.write(request, () => (how === "end" ? socket.end() : socket.destroy()));
    });
    socket.on("error", () => undefined);
    socket.resume();
    socket.on("close", () => resolve());
  });
}

function request(method: string, url: string, options: { token?: string; body?: string } = {}) {
  const head = [`${method} ${url} HTTP/1.1`, "Host: x"];
  if (options.token) head.push(`Authorization: Bearer ${options.token}`);
  if (options.body !== undefined) {
    head.push("Content-Type: application/json", `Content-Length: ${Buffer.byteLength(options.body)}`);
  }
  return `${head.join("\r\n")}\r\n\r\n${options.body ?? ""}`;
}

/** What the rate limiter counted for this client (batched to Redis every 100 ms, rate-limit-store.ts). */
const counted = async (key: string) => Number((await h.redis.get(`${h.prefix}rl:${key}`)) ?? 0);

describe("a client that goes away mid-request", () => {
  it("is counted by the rate limiter, leaves no error or TypeError in the log, and the gateway serves on", async () => {
    const invite = JSON.stringify({ projectID: 5, username: "bob", role: "Editor" });
    const login = JSON.stringify({
      address: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
      signedMessage: "0x",
    });
    // Each sent twice (half-closed, destroyed), under the rate-limit key that counts it.
    const cases: [string, string, { token?: string; body?: string }, string][] = [
      ["GET", "/user/learnusercount", {}, "127.0.0.1"],
      ["GET", "/Project/Get/All", { token }, "127.0.0.1"],
      ["GET", "/user/get", { token }, "127.0.0.1"],
      ["PUT", "/user/invite", { token, body: invite }, "127.0.0.1"],
      [
        "POST",
        "/Project/Add",
        { token, body: JSON.stringify({ projectName: "x", fileHex: "abcd" }) },
        "127.0.0.1",
      ],
      // The stricter limits of the sign-in routes, anonymous and with a token.
      ["POST", "/Authentication/Login", { body: login }, "POST/Authentication/Login-127.0.0.1"],
      [
        "GET",
        "/Authentication/GetNonce/0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
        { token },
        "GET/Authentication/GetNonce/:address-127.0.0.1",
      ],
    ];
    const expected = new Map<string, number>();
    for (const [method, url, options, key] of cases) {
      for (const how of ["end", "destroy"] as const) await goAway(request(method, url, options), how);
      expected.set(key, (expected.get(key) ?? 0) + 2);
    }
    // A body cut short: the socket destroyed before the rest of what Content-Length announced.
    await goAway(request("PUT", "/user/invite", { token, body: invite }).slice(0, -5), "destroy");
    expected.set("127.0.0.1", (expected.get("127.0.0.1") ?? 0) + 1);
    // Refused before the rate limit (no token where one is needed): counted nowhere, logged nowhere.
    await goAway(request("PUT", "/user/invite", { body: invite }), "end");

    const failures = () => lines.filter((l) => l.level >= 50 || l.err?.type === "TypeError");
    const allCounted = async () => {
      for (const [key, n] of expected) if ((await counted(key)) !== n) return false;
      return true;
    };
    // Every request went past the rate limit, or one of them failed there.
    await waitFor(async () => failures().length > 0 || (await allCounted()), 10_000, "the requests' counts");
    expect(failures()).toEqual([]);

    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    // A signed-in route reaches the service behind it (the stand-in answers 409).
    const served = await fetch(`http://127.0.0.1:${port}/user/get`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(served.status).toBe(409);
    expect(failures()).toEqual([]);
  });
});
