import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "./test/harness.ts";

// Answers made below the routes (router, HTTP parser) are the envelope too. Some can only be produced
// on a real socket (Node's parser refuses the request before fastify sees it), so the gateway listens.
let h: Harness;
let port: number;

beforeAll(async () => {
  h = await createHarness();
  const address = await h.app.listen({ port: 0, host: "127.0.0.1" });
  port = Number(new URL(address).port);
});
afterAll(() => h.close());

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Writes `request` as is and reads the answer until the server closes the connection. */
function raw(request: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(request));
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk) => {
      text += chunk;
    });
    // The server may reset a connection it refused while we still write: what arrived counts.
    socket.on("error", () => undefined);
    socket.on("close", () => {
      const [head = "", body = ""] = text.split("\r\n\r\n");
      const [statusLine = "", ...lines] = head.split("\r\n");
      const status = Number(statusLine.split(" ")[1]);
      if (!status) reject(new Error(`no HTTP answer: ${JSON.stringify(text.slice(0, 200))}`));
      const headers = Object.fromEntries(
        lines.map((line) => {
          const colon = line.indexOf(":");
          return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
        }),
      );
      resolve({ status, headers, body });
    });
  });
}

const envelope = (message: string) => ({ data: null, success: false, message });

describe("errors below the routes answer the envelope", () => {
  it("414 for a path parameter over the router's length limit", async () => {
    const res = await h.app.inject(`/Authentication/GetNonce/0x${"a".repeat(200)}`);
    expect(res.statusCode).toBe(414);
    expect(res.headers["x-error-code"]).toBe("FST_ERR_MAX_PARAM_LENGTH");
    expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(res.json()).toEqual(envelope("A path segment is too long."));
  });

  it("400 for a malformed percent-encoding", async () => {
    for (const url of ["/Project/Get/%zz", "/Project/Get/%E0%A4%A", "/user/deleteuser/%"]) {
      const res = await h.app.inject(url);
      expect(res.statusCode, url).toBe(400);
      expect(res.headers["x-error-code"], url).toBe("FST_ERR_BAD_URL");
      expect(res.json(), url).toEqual(envelope("The URL is not validly percent-encoded."));
    }
  });

  it("with the security headers and a request id, on a real socket too", async () => {
    const res = await raw(`GET /Project/Get/%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toEqual(envelope("The URL is not validly percent-encoded."));
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    expect(res.headers["x-frame-options"]).toBe("DENY");
    expect(res.headers["cache-control"]).toBe("no-store");
    expect(res.headers["x-request-id"]).toMatch(/^[\w-]{36}$/);
  });

  it("431 for 100 KB of headers, answered from the HTTP parser's error", async () => {
    const res = await raw(
      `GET /user/learnusercount HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(100_000)}\r\nConnection: close\r\n\r\n`,
    );
    expect(res.status).toBe(431);
    expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(res.headers["x-error-code"]).toBe("HPE_HEADER_OVERFLOW");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    expect(Number(res.headers["content-length"])).toBe(Buffer.byteLength(res.body));
    expect(JSON.parse(res.body)).toEqual(envelope("The request headers are too large."));
  });

  it("400 for bytes that are not HTTP", async () => {
    const res = await raw("HELLO?\r\n\r\n");
    expect(res.status).toBe(400);
    expect(res.headers["x-error-code"]).toBe("HPE_INVALID_METHOD");
    expect(JSON.parse(res.body)).toEqual(envelope("The request is not valid HTTP."));
  });

  it("400 for a HTTP/1.1 request without Host (Node would answer an empty 400)", async () => {
    const res = await raw("GET /user/learnusercount HTTP/1.1\r\nConnection: close\r\n\r\n");
    expect(res.status).toBe(400);
    expect(res.headers["x-error-code"]).toBe("VALIDATION_FAILED");
    expect(JSON.parse(res.body)).toEqual(envelope("The Host header is missing."));
  });

  it("417 for an Expect other than 100-continue (Node would answer an empty 417)", async () => {
    const res = await raw(
      "POST /Authentication/Login HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    );
    expect(res.status).toBe(417);
    expect(res.headers["x-error-code"]).toBe("EXPECTATION_FAILED");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    expect(JSON.parse(res.body)).toEqual(envelope("Only `Expect: 100-continue` is supported."));
  });

  it("still serves the next connection normally", async () => {
    const res = await raw("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ data: "ok", success: true, message: null });
  });
});
