import { type IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { ErrorCode, errors, fail } from "@fundraise/protocol";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import type { Server } from "../server.ts";
import { send, sendStatus } from "./error-handler.ts";
import { BASELINE_HEADERS } from "./security.ts";

/**
 * Answers made below the routes, by fastify's router or by Node's HTTP server itself, in the envelope
 * like every other answer: a URL over `URL_LIMIT` (414), a malformed percent-encoding (400), headers over
 * `HEADERS_LIMIT` (431), a request that is not HTTP (400), no `Host` (400), an `Expect` the server does
 * not meet (417).
 */

/**
 * The longest request target (path and query) served, in bytes (rules.md §8.6): the web client sends
 * markdown URL-encoded in UpdateMarkDown's path, several KB of it. Also the router's `maxParamLength`.
 */
export const URL_LIMIT = 16_384;
/** The most bytes of header names and values served: Node's own default bound. */
export const HEADERS_LIMIT = 16_384;
/**
 * Node's `maxHeaderSize` counts the request target and the headers together, and refuses at the bound
 * with a 431 (`clientErrorHandler`): just past both limits, so that each is held to its own here.
 */
export const HTTP_MAX_HEADER_SIZE = URL_LIMIT + HEADERS_LIMIT + 1;
const URL_TOO_LONG = `The URL is longer than ${URL_LIMIT} bytes.`;
const HEADERS_TOO_LARGE = "The request headers are too large.";

/** The envelope as raw bytes, for answers written where fastify has no reply object. */
function rawAnswer(code: string, message: string): { head: Record<string, string>; body: string } {
  const body = JSON.stringify(fail(message));
  return {
    head: {
      ...BASELINE_HEADERS,
      "content-type": "application/json; charset=utf-8",
      "content-length": String(Buffer.byteLength(body)),
      "x-error-code": code,
      connection: "close",
    },
    body,
  };
}

/**
 * Fastify's `frameworkErrors`: errors of its router, before any route or hook runs (a path parameter
 * over `maxParamLength`, a malformed percent-encoding). The envelope like everything else.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  for (const [name, value] of Object.entries(BASELINE_HEADERS)) reply.header(name, value);
  reply.header("x-request-id", request.id);
  switch (error.code) {
    // A path parameter is never longer than the URL: past `URL_LIMIT` (app.ts), so is the URL.
    case "FST_ERR_MAX_PARAM_LENGTH":
      sendStatus(reply, 414, error.code, URL_TOO_LONG);
      return;
    case "FST_ERR_BAD_URL":
      sendStatus(reply, 400, error.code, "The URL is not validly percent-encoded.");
      return;
    default:
      request.log.error({ err: error }, "framework error");
      send(reply, errors.internal(ErrorCode.INTERNAL, "An unexpected error occurred."));
  }
}

/** A parser error as Node hands it over: the chunk it was parsing and how far it got in it. */
interface ParserError extends NodeJS.ErrnoException {
  rawPacket?: unknown;
  bytesParsed?: number;
}

/**
 * Whether a request that overflowed Node's parser has a URL over `URL_LIMIT`: the parser stopped inside its
 * request line, or that line's target is too long. Known only when the request began in the chunk the
 * parser refused (a client writes its head at once); otherwise the overflow is answered as the headers'.
 */
export function urlOverflowed(error: ParserError): boolean {
  const packet = error.rawPacket;
  if (!Buffer.isBuffer(packet)) return false;
  const method = /^[A-Z-]+ /.exec(packet.subarray(0, 32).toString("latin1"))?.[0];
  if (!method) return false;
  const lineEnd = packet.indexOf("\n");
  if (lineEnd === -1 || lineEnd >= (error.bytesParsed ?? packet.length)) return true;
  // `<target> HTTP/1.1`: the target ends at the last space.
  const rest = packet.subarray(method.length, lineEnd).toString("latin1").trimEnd();
  return rest.lastIndexOf(" ") > URL_LIMIT;
}

/** Status, code and message for an HTTP request that Node's parser refused. */
function clientErrorAnswer(error: ParserError): [number, string, string] {
  switch (error.code) {
    case "HPE_HEADER_OVERFLOW":
      return urlOverflowed(error)
        ? [414, "URL_TOO_LONG", URL_TOO_LONG]
        : [431, error.code, HEADERS_TOO_LARGE];
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return [408, error.code, "The request did not arrive in time."];
    default:
      return [400, error.code ?? "BAD_REQUEST", "The request is not valid HTTP."];
  }
}

/**
 * The HTTP server's `clientError` (fastify's `clientErrorHandler`): Node's parser refused the request
 * (headers over `maxHeaderSize`, not HTTP at all), so there is no request object; the envelope is
 * written to the socket by hand, as Node itself would write its bare status line.
 */
export function clientErrorHandler(this: Server, error: ParserError, socket: Socket): void {
  // A reset connection has nobody to answer.
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const [status, code, message] = clientErrorAnswer(error);
  this.log.debug({ err: error, status }, "client error");
  // Only when nothing of an answer was written yet on this connection.
  if (socket.writable && socket.bytesWritten === 0) {
    const { head, body } = rawAnswer(code, message);
    const lines = Object.entries(head).map(([name, value]) => `${name}: ${value}\r\n`);
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${lines.join("")}\r\n${body}`);
  }
  socket.destroy(error);
}

/**
 * Node answers some requests itself, with an empty body: a HTTP/1.1 request without `Host` and an
 * `Expect` other than `100-continue`. The server is told to leave them to us (`requireHostHeader:
 * false` in app.ts) and they are answered here. Also holds the URL and the headers to their limits,
 * and keeps each connection's client address.
 */
export function registerHttpEdge(app: Server, requestTimeoutMs: number): void {
  // The client's address is read as its connection is accepted, and kept by the socket: Node knows the
  // peer only while the socket is open, and a request outlives a client that went away. Read later, after
  // the authentication hook had awaited, `request.ip` was undefined and @fastify/rate-limit's key
  // (`ip.toLowerCase()`) threw a TypeError, logged as a failed request.
  app.server.on("connection", (socket: Socket) => {
    void socket.remoteAddress;
  });
  app.server.on("checkExpectation", (_request: IncomingMessage, response: ServerResponse) => {
    const { head, body } = rawAnswer("EXPECTATION_FAILED", "Only `Expect: 100-continue` is supported.");
    response.writeHead(417, head).end(body);
  });
  app.addHook("onRequest", (request, reply, done) => {
    // Node's parser held the URL and the headers to their sum (HTTP_MAX_HEADER_SIZE): each to its own here.
    if (request.raw.url !== undefined && request.raw.url.length > URL_LIMIT) {
      answerHere(reply, 414, "URL_TOO_LONG", URL_TOO_LONG);
      return;
    }
    if (headerBytes(request.raw.rawHeaders) > HEADERS_LIMIT) {
      answerHere(reply, 431, "HEADERS_TOO_LARGE", HEADERS_TOO_LARGE);
      return;
    }
    if (request.raw.httpVersion === "1.1" && !request.headers.host) {
      done(errors.validation(ErrorCode.VALIDATION_FAILED, "The Host header is missing."));
      return;
    }
    if (hasBody(request.raw)) holdBodyToDeadline(app, request.raw, requestTimeoutMs);
    done();
  });
}

function hasBody(raw: IncomingMessage): boolean {
  const length = raw.headers["content-length"];
  return raw.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

/**
 * A body must have arrived `ms` after its request began, else 408 as for headers that never end (Node's
 * `requestTimeout` covers those; a body shorter than its Content-Length, or a chunk never finished, it
 * let hold the connection for good): the answer is written on the socket, which is closed.
 */
function holdBodyToDeadline(app: Server, raw: IncomingMessage, ms: number): void {
  const timer = setTimeout(() => {
    if (raw.complete || raw.socket.destroyed) return;
    const error: ParserError = Object.assign(new Error("The request did not arrive in time."), {
      code: "ERR_HTTP_REQUEST_TIMEOUT",
    });
    clientErrorHandler.call(app, error, raw.socket);
  }, ms);
  timer.unref();
  const clear = () => clearTimeout(timer);
  raw.once("end", clear);
  raw.once("close", clear);
}

/** Header bytes as Node's parser counts them: names and values. */
function headerBytes(rawHeaders: string[]): number {
  let bytes = 0;
  for (const part of rawHeaders) bytes += part.length;
  return bytes;
}

/** The envelope from the first hook, before the security headers' hook has run. */
function answerHere(reply: FastifyReply, status: number, code: string, message: string): void {
  reply.headers(BASELINE_HEADERS);
  sendStatus(reply, status, code, message);
}
