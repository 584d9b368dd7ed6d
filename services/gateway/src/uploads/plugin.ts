import type { ContentLimits, Ipfs, Releaser } from "@fundraise/ipfs";
import type { ContentRef } from "@fundraise/protocol";
import { ErrorCode, errors } from "@fundraise/protocol";
import type { FastifyRequest } from "fastify";
import { hexJsonBody } from "../plugins/hex-body.ts";
import { hexToBytes } from "../routes/params.ts";
import type { Server } from "../server.ts";
import { CONTENT_FIELDS, type ContentField, ContentUpload, PART_BYTES, WINDOW } from "./content-upload.ts";
import { DirectoryAdd } from "./directory-add.ts";
import { releaseRefused } from "./released.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** The upload of this request's content (the upload routes; null elsewhere and until needed). */
    upload: ContentUpload | null;
  }
}

/** What the upload routes need: the node they add to, its deadline, the content limits, the releases. */
export interface UploadDeps {
  ipfs: Ipfs;
  timeoutMs: number;
  limits: ContentLimits;
  /** The projects service's releases (ProjectsRpc.releaseContent): the only door to an unpin. */
  releaser: Releaser;
}

/**
 * Makes the routes registered on `app` (an encapsulated context: Add and Update) add their content to
 * IPFS, pinned, while the body arrives (uploads/content-upload.ts), and, for any request not answered
 * with success (its write refused it, or never ran), cancel the add or release what it pinned.
 */
export function addContentToIpfs(app: Server, deps: UploadDeps): void {
  app.decorateRequest("upload", null);
  hexJsonBody(app, Object.keys(CONTENT_FIELDS), (request) => uploadOf(request, deps), PART_BYTES);
  app.addHook("onResponse", async (request, reply) => {
    if (reply.statusCode < 400 || !request.upload) return;
    request.upload.abort();
    const cid = request.upload.pinned;
    if (cid) void releaseRefused(cid, { ...deps, log: request.log });
  });
}

function uploadOf(request: FastifyRequest, deps: UploadDeps): ContentUpload {
  request.upload ??= new ContentUpload(new DirectoryAdd({ ...deps, window: WINDOW }));
  return request.upload;
}

const notHex = (field: string) =>
  errors.validation(ErrorCode.VALIDATION_FAILED, `${field} must be a hexadecimal string of whole bytes.`);

/**
 * A content field of the parsed body: added while the body arrived, or, a short value the scanner kept
 * as text (`0x…`), decoded and added now. Anything else is the caller's 400.
 */
export function takeContentField(request: FastifyRequest, field: ContentField, value: string): void {
  const taken = request.hexValues?.take(value);
  if (taken && "invalid" in taken) throw notHex(field);
  if (!taken) (request.upload as ContentUpload).send(field, hexToBytes(value, field));
}

/** The request's content once the node has it all (null when the body had none). */
export function contentOf(request: FastifyRequest): Promise<ContentRef | null> {
  return request.upload ? request.upload.handOver() : Promise.resolve(null);
}
