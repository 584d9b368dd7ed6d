import { ErrorCode, errors } from "@fundraise/protocol";
import type { FastifyRequest } from "fastify";
import secureJson from "secure-json-parse";
import type { Server } from "../server.ts";
import { HexJsonScanner, type HexValues } from "./hex-json.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** The hex fields `hexJsonBody` decoded from this request's body (null on other routes). */
    hexValues: HexValues | null;
  }
}

const malformed = () => errors.validation(ErrorCode.MALFORMED_JSON, "The request body is not valid JSON.");
const tooLarge = () => errors.payloadTooLarge(ErrorCode.PAYLOAD_TOO_LARGE, "The request body is too large.");

/**
 * JSON bodies of the routes registered on `app` (an encapsulated context: the upload routes) are read as
 * they arrive, with the top-level string values of `hexKeys` decoded into bytes on the way (hex-json.ts).
 * The route's body limit, the empty body and bad JSON answer as fastify's own parser does; prototype
 * poisoning is refused as fastify refuses it.
 */
export function hexJsonBody(app: Server, hexKeys: readonly string[]): void {
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
    const scanner = new HexJsonScanner(keys, Number.isFinite(declared) ? declared : 64 * 1024);
    let received = 0;
    let failed = false;
    const fail = (error: Error) => {
      if (failed) return;
      failed = true;
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
    });
    payload.on("error", (error) => fail(error));
    payload.on("end", () => {
      if (failed) return;
      const { text, values } = scanner.end();
      if (text.trim() === "") {
        done(malformed(), undefined);
        return;
      }
      let body: unknown;
      try {
        body = secureJson.parse(text, undefined, { protoAction: "error", constructorAction: "error" });
      } catch {
        done(malformed(), undefined);
        return;
      }
      request.hexValues = values;
      done(null, body);
    });
  });
}
