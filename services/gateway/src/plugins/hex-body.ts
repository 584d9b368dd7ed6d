import { ErrorCode, errors } from "@fundraise/protocol";
import type { FastifyRequest } from "fastify";
import secureJson from "secure-json-parse";
import type { Server } from "../server.ts";
import type { HexSink } from "./hex-decoder.ts";
import { HexJsonScanner, type HexValues } from "./hex-json.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** The hex fields `hexJsonBody` decoded from this request's body (null on other routes). */
    hexValues: HexValues | null;
  }
}

const malformed = () => errors.validation(ErrorCode.MALFORMED_JSON, "The request body is not valid JSON.");
const tooLarge = () => errors.payloadTooLarge(ErrorCode.PAYLOAD_TOO_LARGE, "The request body is too large.");

/** Where one request's decoded hex values go while its body arrives (the upload routes: to storage). */
export interface HexBodySinks {
  /** The sink of a value of `key` (lower case), asked when its first bytes are ready. */
  open(key: string): HexSink;
  /** Undefined while more bytes are welcome; else resolves when they are, or rejects to end the request. */
  ready(): Promise<void> | undefined;
  /** The body will not be read to its end (too large, not JSON, the client gone): drop what was sent. */
  abort(): void;
}

/**
 * JSON bodies of the routes registered on `app` (an encapsulated context: the upload routes) are read as
 * they arrive, with the top-level string values of `hexKeys` decoded into bytes on the way and handed
 * to the request's sinks part by part (hex-json.ts). The body is read no faster than the sinks take the
 * parts (the request stream is paused meanwhile), and a sink's failure answers at once. The route's body
 * limit, the empty body and bad JSON answer as fastify's own parser does; prototype poisoning is refused
 * as fastify refuses it.
 */
export function hexJsonBody(
  app: Server,
  hexKeys: readonly string[],
  sinksOf: (request: FastifyRequest) => HexBodySinks,
  partBytes?: number,
): void {
  const keys = new Set(hexKeys.map((key) => key.toLowerCase()));
  app.decorateRequest("hexValues", null);
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", (request: FastifyRequest, payload, done) => {
    const limit = request.routeOptions.bodyLimit ?? 1024 * 1024;
    const declared = Number(request.headers["content-length"] ?? Number.NaN);
    if (declared > limit) {
      done(tooLarge(), undefined);
      return;
    }
    const sinks = sinksOf(request);
    const scanner = new HexJsonScanner(keys, (key) => sinks.open(key), partBytes);
    let received = 0;
    let failed = false;
    const fail = (error: Error) => {
      if (failed) return;
      failed = true;
      sinks.abort();
      payload.removeAllListeners("data");
      payload.resume(); // drain what is left, so the answer can be sent on this connection
      done(error, undefined);
    };
    payload.on("data", (chunk: Buffer) => {
      if (failed) return;
      received += chunk.length;
      if (received > limit) {
        fail(tooLarge());
        return;
      }
      scanner.write(chunk);
      const ready = sinks.ready();
      if (!ready) return;
      payload.pause();
      ready.then(() => {
        if (!failed) payload.resume();
      }, fail);
    });
    let ended = false;
    payload.on("error", (error) => fail(error));
    // A client that goes away mid-body: nobody will read the answer, but what was sent must go.
    payload.on("close", () => {
      if (!ended) fail(new Error("the request was closed before its body ended"));
    });
    payload.on("end", () => {
      ended = true;
      if (failed) return;
      const { text, values } = scanner.end();
      if (text.trim() === "") {
        fail(malformed());
        return;
      }
      let body: unknown;
      try {
        body = secureJson.parse(text, undefined, { protoAction: "error", constructorAction: "error" });
      } catch {
        fail(malformed());
        return;
      }
      request.hexValues = values;
      done(null, body);
    });
  });
}
