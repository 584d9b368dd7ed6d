import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { gzip as gzipCallback } from "node:zlib";
import type { FastifyReply, FastifyRequest } from "fastify";

const gzip = promisify(gzipCallback);

/** Serialized answers one route keeps, at most: the tags of a few views (anonymous, all, n of GetProjects). */
const MAX_KEPT = 16;
/** Answers smaller than this go as they are: gzip would save less than it costs. */
const GZIP_FROM_BYTES = 1024;
const JSON_TYPE = "application/json; charset=utf-8";

interface Kept {
  /** The serialized answer, encoded once (a kept copy is sent many times). */
  body: Buffer;
  /** The same answer gzipped, made once on the first request that accepts it. */
  gzipped?: Promise<Buffer>;
}

const etagOf = (text: string) => `"${createHash("sha256").update(text).digest("base64url").slice(0, 27)}"`;

/** Whether the client holds `etag` (`If-None-Match`, weak or strong, one of a list). */
const holds = (request: FastifyRequest, etag: string) =>
  request.headers["if-none-match"]?.split(",").some((value) => value.trim().replace(/^W\//, "") === etag) ??
  false;

/** Whether the request accepts gzip (`Accept-Encoding`, without `;q=0`). */
function acceptsGzip(request: FastifyRequest): boolean {
  const header = request.headers["accept-encoding"];
  if (typeof header !== "string") return false;
  return header.split(",").some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(";");
    if (coding !== "gzip" && coding !== "*") return false;
    return !params.some((param) => /^\s*q=0(\.0*)?\s*$/.test(param));
  });
}

/**
 * One route's answers by version tag: the tag names the answer's content for every caller who gets it
 * (projects' `listTag`: the shared view and the table's version), so one serialized copy serves them all
 * until the tag moves, gzipped once for the clients that accept it, and a client holding it revalidates
 * with `If-None-Match` for a 304. The tag never crosses views, so a copy is never served to a caller of
 * another view.
 */
// (A reply is thenable: these functions settle when it is sent, and never resolve to it.)
async function send(entry: Kept, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  reply.type(JSON_TYPE);
  if (entry.body.length < GZIP_FROM_BYTES || !acceptsGzip(request)) {
    reply.send(entry.body);
    return;
  }
  entry.gzipped ??= gzip(entry.body);
  reply.header("content-encoding", "gzip").send(await entry.gzipped);
}

/**
 * Any other read: the answer is built, and its content names it. `ETag` is the hash of the serialized
 * answer, so `If-None-Match` saves the transfer (304), not the work; gzip when the client accepts it.
 */
export async function sendByContent(
  request: FastifyRequest,
  reply: FastifyReply,
  body: unknown,
): Promise<void> {
  const text = String(reply.serialize(body));
  const etag = etagOf(text);
  reply.header("etag", etag).header("vary", "accept-encoding");
  if (holds(request, etag)) {
    reply.code(304).send();
    return;
  }
  await send({ body: Buffer.from(text) }, request, reply);
}

export function versionedAnswers() {
  const kept = new Map<string, Kept>();

  return {
    /** 304 for a client that holds this version, or the kept copy when there is one: true once sent. */
    async answer(tag: string, request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
      const etag = etagOf(tag);
      reply.header("etag", etag).header("vary", "accept-encoding");
      if (holds(request, etag)) {
        reply.code(304).send();
        return true;
      }
      const entry = kept.get(tag);
      if (entry === undefined) return false;
      kept.delete(tag);
      kept.set(tag, entry);
      await send(entry, request, reply);
      return true;
    },

    /** Serializes the answer as the route's schema says, keeps it under `tag`, and sends it. */
    keep(tag: string, request: FastifyRequest, reply: FastifyReply, body: unknown): Promise<void> {
      const entry: Kept = { body: Buffer.from(String(reply.serialize(body))) };
      if (kept.size >= MAX_KEPT) kept.delete(kept.keys().next().value as string);
      kept.set(tag, entry);
      return send(entry, request, reply);
    },
  };
}
