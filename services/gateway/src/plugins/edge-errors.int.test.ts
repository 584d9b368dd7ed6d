import { connect } from "node:net";
import { ErrorCode, errors, ProjectsRpc } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../test/harness.ts";
import { HEADERS_LIMIT, URL_LIMIT, urlOverflowed } from "./edge-errors.ts";

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
function raw(request: string, to = port): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(to, "127.0.0.1", () => socket.write(request));
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
  it("414 for a URL over 16384 bytes: a path parameter past the router's limit, or any URL", async () => {
    for (const [url, code] of [
      [`/Authentication/GetNonce/0x${"a".repeat(URL_LIMIT)}`, "FST_ERR_MAX_PARAM_LENGTH"],
      [`/healthz?pad=${"a".repeat(URL_LIMIT)}`, "URL_TOO_LONG"],
      [`/no/such/route/${"a".repeat(URL_LIMIT)}`, "URL_TOO_LONG"],
      [`/healthz?pad=${"a".repeat(URL_LIMIT - "/healthz?pad=".length + 1)}`, "URL_TOO_LONG"],
    ]) {
      const res = await h.app.inject(url as string);
      expect(res.statusCode, code).toBe(414);
      expect(res.headers["x-error-code"]).toBe(code);
      expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
      expect(res.headers["cache-control"]).toBe("no-store");
      expect(res.json()).toEqual(envelope(`The URL is longer than ${URL_LIMIT} bytes.`));
    }
  });

  it("serves a URL of exactly 16384 bytes, and a path segment of several KB (no more 414 past 100)", async () => {
    const exact = await h.app.inject(`/healthz?pad=${"a".repeat(URL_LIMIT - "/healthz?pad=".length)}`);
    expect(exact.statusCode).toBe(200);
    const address = await h.app.inject(`/Authentication/GetNonce/0x${"a".repeat(5_000)}`);
    expect(address.statusCode).toBe(400);
  });

  it("gives UpdateMarkDown's service the markdown exactly as decoded from several KB of path", async () => {
    const sent: string[] = [];
    await h.bus.serve(ProjectsRpc.updateMarkdown, async (request) => {
      sent.push(request.markDown);
      throw errors.notFound(ErrorCode.PROJECT_NOT_FOUND, "No such project.");
    });
    const text = "# Título 日本語 🚀\nslash / hash # query ? amp & 100% plus + semi ;\r\n\ttab\n".repeat(60);
    const res = await h.app.inject({
      method: "PUT",
      url: `/Project/UpdateMarkDown/7/${encodeURIComponent(text)}`,
      headers: { authorization: `Bearer ${await h.signer.sign({ userId: 5, role: "Base" })}` },
    });
    expect(res.statusCode).toBe(404);
    expect(sent).toEqual([text]);
  });

  it("431 in the envelope for headers over 16384 bytes, however long the URL is not", async () => {
    // Header bytes count names and values, as Node's parser does; inject adds a few of its own.
    const res = await h.app.inject({ url: "/healthz", headers: { "x-pad": "a".repeat(HEADERS_LIMIT) } });
    expect(res.statusCode).toBe(431);
    expect(res.headers["x-error-code"]).toBe("HEADERS_TOO_LARGE");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    expect(res.json()).toEqual(envelope("The request headers are too large."));
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

  it("takes a URL and headers of 16384 bytes each on a socket (Node's parser counts them together)", async () => {
    const url = `/healthz?pad=${"u".repeat(URL_LIMIT - "/healthz?pad=".length)}`;
    // Host, x, X-Pad, Connection, close: 25 bytes besides the pad.
    const pad = "h".repeat(HEADERS_LIMIT - 25);
    const res = await raw(`GET ${url} HTTP/1.1\r\nHost: x\r\nX-Pad: ${pad}\r\nConnection: close\r\n\r\n`);
    expect(res.status).toBe(200);
    const over = await raw(`GET ${url}u HTTP/1.1\r\nHost: x\r\nX-Pad: ${pad}\r\nConnection: close\r\n\r\n`);
    expect(over.status).toBe(414);
    expect(JSON.parse(over.body)).toEqual(envelope(`The URL is longer than ${URL_LIMIT} bytes.`));
    const more = await raw(`GET ${url} HTTP/1.1\r\nHost: x\r\nX-Pad: ${pad}h\r\nConnection: close\r\n\r\n`);
    expect(more.status).toBe(431);
    expect(JSON.parse(more.body)).toEqual(envelope("The request headers are too large."));
  });

  it("414 from the HTTP parser's error for a request line past what it takes at all", async () => {
    for (const length of [40_000, 100_000]) {
      const res = await raw(
        `GET /healthz?pad=${"a".repeat(length)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      );
      // The refused chunk shows the request line only when the request began in it; when the kernel
      // delivered the head in pieces (a loaded machine), the overflow is answered as the headers' (431).
      const [code, message] =
        res.status === 414
          ? ["URL_TOO_LONG", `The URL is longer than ${URL_LIMIT} bytes.`]
          : ["HPE_HEADER_OVERFLOW", "The request headers are too large."];
      expect([414, 431], String(length)).toContain(res.status);
      expect(res.headers["x-error-code"]).toBe(code);
      expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
      expect(JSON.parse(res.body)).toEqual(envelope(message));
    }
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

describe("which part of a request overflowed the HTTP parser", () => {
  const error = (packet: string, bytesParsed?: number) =>
    Object.assign(new Error("Parse Error: Header overflow"), {
      code: "HPE_HEADER_OVERFLOW",
      rawPacket: Buffer.from(packet, "latin1"),
      ...(bytesParsed === undefined ? {} : { bytesParsed }),
    });
  const long = `/${"a".repeat(URL_LIMIT)}`;

  it("the URL when the parser stopped in the request line, or the line's target is over the limit", () => {
    expect(urlOverflowed(error("GET /aaaaaaaa", 13))).toBe(true);
    expect(urlOverflowed(error("PUT /aaaa HTTP/1.1\r\nHost: x\r\n", 9))).toBe(true);
    expect(urlOverflowed(error("M-SEARCH /aaaa"))).toBe(true);
    const headers = `GET ${long} HTTP/1.1\r\nX-Pad: aaaa`;
    expect(urlOverflowed(error(headers, headers.length))).toBe(true);
  });

  it("the headers otherwise, or when it cannot tell (the request began in an earlier chunk)", () => {
    expect(urlOverflowed(error("GET / HTTP/1.1\r\nX-Pad: aaaa", 28))).toBe(false);
    const exact = `GET ${long.slice(1)} HTTP/1.1\r\nX-Pad: aaaa`;
    expect(urlOverflowed(error(exact, exact.length))).toBe(false);
    expect(urlOverflowed(error("aaaaaaaaaaaa", 12))).toBe(false);
    expect(urlOverflowed(error(" GET /aaaa", 10))).toBe(false);
    expect(urlOverflowed(Object.assign(new Error("x"), { code: "HPE_HEADER_OVERFLOW" }))).toBe(false);
  });
});

describe("a request that never finishes arriving (HTTP_REQUEST_TIMEOUT_MS, here 1 s)", () => {
  let slow: Harness;
  let slowPort: number;
  beforeAll(async () => {
    slow = await createHarness({ HTTP_REQUEST_TIMEOUT_MS: "1000" });
    slowPort = Number(new URL(await slow.app.listen({ port: 0, host: "127.0.0.1" })).port);
  });
  afterAll(() => slow.close());

  it("408 in the envelope, the connection closed, for a body shorter than its Content-Length or a chunk never ended", async () => {
    const started = Date.now();
    const answers = await Promise.all([
      raw(
        "POST /Authentication/Login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{}",
        slowPort,
      ),
      raw(
        "POST /Authentication/Register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{}",
        slowPort,
      ),
      raw("POST /Project/Add HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n", slowPort),
    ]);
    for (const res of answers) {
      expect(res.status).toBe(408);
      expect(res.headers["x-error-code"]).toBe("ERR_HTTP_REQUEST_TIMEOUT");
      expect(JSON.parse(res.body)).toEqual(envelope("The request did not arrive in time."));
    }
    // Not before the limit (Node checks connections every tenth of it).
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it("does not end a stream whose request arrived: GET /events outlives the limit", async () => {
    const stop = new AbortController();
    const response = await fetch(`http://127.0.0.1:${slowPort}/events`, { signal: stop.signal });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    await new Promise((r) => setTimeout(r, 2500));
    // Still open: a heartbeat or message can be read, or the read waits (no end of stream).
    const next = await Promise.race([reader.read(), new Promise((r) => setTimeout(() => r("open"), 500))]);
    expect(next === "open" || (next as { done: boolean }).done === false).toBe(true);
    stop.abort();
  });
});
