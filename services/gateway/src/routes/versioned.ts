import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";

/** Serialized answers one route keeps, at most: the tags of a few views (anonymous, all, n of GetProjects). */
const MAX_KEPT = 16;
const JSON_TYPE = "application/json; charset=utf-8";

/**
 * One route's answers by version tag: the tag names the answer's content for every caller who gets it
 * (projects' `listTag`: the shared view and the table's version), so one serialized copy serves them all
 * until the tag moves, and a client holding it revalidates with `If-None-Match` for a 304. The tag never
 * crosses views, so a copy is never served to a caller of another view.
 */
export function versionedAnswers() {
  const kept = new Map<string, string>();
  const etagOf = (tag: string) => `"${createHash("sha256").update(tag).digest("base64url").slice(0, 27)}"`;

  return {
    /** 304 for a client that holds this version; the kept copy when there is one; else undefined. */
    answer(tag: string, request: FastifyRequest, reply: FastifyReply): FastifyReply | undefined {
      const etag = etagOf(tag);
      reply.header("etag", etag);
      const held = request.headers["if-none-match"];
      if (held?.split(",").some((value) => value.trim().replace(/^W\//, "") === etag)) {
        return reply.code(304).send();
      }
      const text = kept.get(tag);
      if (text === undefined) return undefined;
      kept.delete(tag);
      kept.set(tag, text);
      return reply.type(JSON_TYPE).send(text);
    },

    /** Serializes the answer as the route's schema says, keeps it under `tag`, and sends it. */
    keep(tag: string, reply: FastifyReply, body: unknown): FastifyReply {
      const text = String(reply.serialize(body));
      if (kept.size >= MAX_KEPT) kept.delete(kept.keys().next().value as string);
      kept.set(tag, text);
      return reply.type(JSON_TYPE).send(text);
    },
  };
}
