import type { FastifyRequest } from "fastify";

/** What the `Authorization` header of a request says. */
export type Bearer =
  | { kind: "none" }
  | { kind: "token"; token: string }
  /** Present but not exactly one `Bearer <token>`: a bad token, never a fallback to anonymous. */
  | { kind: "malformed" };

/** The web client sends these when nobody is signed in; they mean "anonymous", not "bad token". */
const ANONYMOUS_BEARERS = new Set(["", "undefined", "null"]);

/**
 * Exactly one header, exactly `Bearer <token>`: the scheme in any case, one space, a token without
 * whitespace. `Bearer`, `Bearer `, `Bearer undefined` and `Bearer null` are no token at all (Node
 * trims the header, so `Bearer ` arrives as `Bearer`). A bare token, `Bearer<jwt>`, another scheme, two
 * spaces or a repeated header are malformed; Node keeps only the first of repeated `Authorization`
 * headers, so they are counted in the raw headers.
 */
export function bearerOf(request: FastifyRequest): Bearer {
  const raw = request.raw.rawHeaders;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]?.toLowerCase() === "authorization") count++;
  const header = request.headers.authorization;
  if (count > 1) return { kind: "malformed" };
  if (header === undefined || header === "") return { kind: "none" };
  const match = /^bearer(?: (\S*))?$/i.exec(header);
  if (!match) return { kind: "malformed" };
  const token = match[1] ?? "";
  return ANONYMOUS_BEARERS.has(token.toLowerCase()) ? { kind: "none" } : { kind: "token", token };
}
