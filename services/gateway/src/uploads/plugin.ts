import type { Bus } from "@fundraise/bus";
import { ErrorCode, errors, StorageUpload } from "@fundraise/protocol";
import type { FastifyRequest } from "fastify";
import { hexJsonBody } from "../plugins/hex-body.ts";
import { hexToBytes } from "../routes/params.ts";
import type { Server } from "../server.ts";
import { CONTENT_FIELDS, type ContentField, ContentUpload } from "./content-upload.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** The upload of this request's content (the upload routes; null elsewhere and until needed). */
    upload: ContentUpload | null;
  }
}

/**
 * Makes the routes registered on `app` (an encapsulated context: Add and Update) stream their content to
 * storage while the body arrives (uploads/content-upload.ts), and abort the upload of any request not
 * answered with success (its write refused it, or never ran).
 */
export function streamContentUploads(app: Server, bus: Bus): void {
  app.decorateRequest("upload", null);
  hexJsonBody(app, Object.keys(CONTENT_FIELDS), (request) => uploadOf(request, bus), StorageUpload.partBytes);
  app.addHook("onResponse", async (request, reply) => {
    if (reply.statusCode >= 400) request.upload?.abort();
  });
}

function uploadOf(request: FastifyRequest, bus: Bus): ContentUpload {
  request.upload ??= new ContentUpload(bus, request.id);
  return request.upload;
}

const notHex = (field: string) =>
  errors.validation(ErrorCode.VALIDATION_FAILED, `${field} must be a hexadecimal string of whole bytes.`);

/**
 * A content field of the parsed body: streamed while the body arrived, or, a short value the scanner kept
 * as text (`0x…`), decoded and sent now. Anything else is the caller's 400.
 */
export function takeContentField(request: FastifyRequest, field: ContentField, value: string): void {
  const taken = request.hexValues?.take(value);
  if (taken && "invalid" in taken) throw notHex(field);
  if (!taken) (request.upload as ContentUpload).send(field, hexToBytes(value, field));
}

/** The request's content, once every part sent is answered (null when the body had none). */
export function contentOf(request: FastifyRequest) {
  return request.upload ? request.upload.handOver() : Promise.resolve(null);
}
