import { type IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { ErrorCode, errors, fail } from "@fundraise/protocol";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import type { Server } from "../server.ts";
import { send, sendStatus } from "./error-handler.ts";
import { BASELINE_HEADERS } from "./security.ts";

/**
 * Answers made below the routes, by fastify's router or by Node's HTTP server itself, in the envelope
 * like every other answer: a path parameter over `maxParamLength` (414), a malformed percent-encoding
 * (400), headers over `maxHeaderSize` (431), a request that is not HTTP (400), no `Host` (400), an
 * `Expect` the server does not meet (417).
 */

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
    case "FST_ERR_MAX_PARAM_LENGTH":
      sendStatus(reply, 414, error.code, "A path segment is too long.");
      return;
    case "FST_ERR_BAD_URL":
      sendStatus(reply, 400, error.code, "The URL is not validly percent-encoded.");
      return;
    default:
      request.log.error({ err: error }, "framework error");
      send(reply, errors.internal(ErrorCode.INTERNAL, "An unexpected error occurred."));
  }
}

/** Status, code and message for an HTTP request that Node's parser refused. */
function clientErrorAnswer(code: string | undefined): [number, string, string] {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return [431, code, "The request headers are too large."];
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return [408, code, "The request did not arrive in time."];
    default:
      return [400, code ?? "BAD_REQUEST", "The request is not valid HTTP."];
  }
}

/**
 * The HTTP server's `clientError` (fastify's `clientErrorHandler`): Node's parser refused the request
 * (headers over `maxHeaderSize`, not HTTP at all), so there is no request object; the envelope is
 * written to the socket by hand, as Node itself would write its bare status line.
 */
export function clientErrorHandler(this: Server, error: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has nobody to answer.
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const [status, code, message] = clientErrorAnswer(error.code);
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
 * false` in app.ts) and they are answered here. Also keeps each connection's client address.
 */
export function registerHttpEdge(app: Server): void {
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
  app.addHook("onRequest", (request, _reply, done) => {
    if (request.raw.httpVersion === "1.1" && !request.headers.host) {
      done(errors.validation(ErrorCode.VALIDATION_FAILED, "The Host header is missing."));
      return;
    }
    done();
  });
}
