import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { FsBlockstore } from "blockstore-fs";
import { exporter } from "ipfs-unixfs-exporter";
import { CID } from "multiformats/cid";
import { isNotFound } from "./rpc-args.ts";
import { gatewayContentType, SNIFF_BYTES } from "./sniff.ts";

/**
 * A read-only path gateway, `GET`/`HEAD /ipfs/<cid>[/<path>]`, as Kubo's (boxo's) serves a UnixFS file:
 * its bytes, a Content-Type by extension then by content (sniff.ts), immutable caching, `Etag` the file's
 * CID, single byte ranges (206, 416), `If-None-Match` (304), `?filename=` / `?download=true`, and boxo's
 * default CORS headers. Kubo also serves `/ipfs/` on its RPC port, as this node does. The node has no
 * network: a block it lacks is a 404 at once, never a wait. A directory is a 404 (Kubo would list it or
 * serve its index.html); a path below a file is a 404, a malformed CID a 400.
 */

const IMMUTABLE = "public, max-age=29030400, immutable";

/** boxo's `ApplyCors` defaults, on every gateway answer. */
const CORS: OutgoingHttpHeaders = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Allow-Methods": "GET, HEAD, OPTIONS",
  "Access-Control-Allow-Headers": "Content-Type, Range, User-Agent, X-Requested-With",
  "Access-Control-Expose-Headers":
    "Content-Length, Content-Range, X-Chunked-Output, X-Ipfs-Path, X-Ipfs-Roots, X-Stream-Output",
};

class GatewayError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A `Range` header as Go's `http.ServeContent` reads it (one range served; several: the whole file). */
export type RangeRequest =
  | { kind: "whole" }
  | { kind: "part"; start: number; end: number }
  | { kind: "unsatisfiable" }
  | { kind: "invalid" };

export function parseRange(header: string | undefined, size: number): RangeRequest {
  if (header === undefined || header === "") return { kind: "whole" };
  if (!header.startsWith("bytes=")) return { kind: "invalid" };
  const ranges: { start: number; end: number }[] = [];
  let noOverlap = false;
  for (const spec of header.slice("bytes=".length).split(",")) {
    const part = spec.trim();
    if (part === "") continue;
    const dash = part.indexOf("-");
    if (dash < 0) return { kind: "invalid" };
    const from = part.slice(0, dash).trim();
    const to = part.slice(dash + 1).trim();
    const digits = (s: string) => (/^[0-9]{1,15}$/.test(s) ? Number(s) : undefined);
    if (from === "") {
      // The last `to` bytes.
      const suffix = digits(to);
      if (suffix === undefined) return { kind: "invalid" };
      if (suffix === 0 || size === 0) {
        noOverlap = true;
        continue;
      }
      ranges.push({ start: Math.max(0, size - suffix), end: size - 1 });
      continue;
    }
    const start = digits(from);
    if (start === undefined) return { kind: "invalid" };
    if (start >= size) {
      noOverlap = true;
      continue;
    }
    const end = to === "" ? size - 1 : digits(to);
    if (end === undefined || end < start) return { kind: "invalid" };
    ranges.push({ start, end: Math.min(end, size - 1) });
  }
  if (ranges.length === 0) return noOverlap ? { kind: "unsatisfiable" } : { kind: "invalid" };
  const total = ranges.reduce((sum, r) => sum + r.end - r.start + 1, 0);
  // Go sends the whole file when the ranges add up to more than it; several ranges would be a
  // multipart/byteranges answer, which this gateway does not make: the whole file instead (RFC 9110 allows it).
  if (ranges.length > 1 || total > size) return { kind: "whole" };
  return { kind: "part", ...ranges[0]! };
}

/** `/ipfs/<cid>/<a>/<b>` → the root CID and the decoded path segments. */
function parsePath(pathname: string): { root: CID; segments: string[] } {
  const [, , first = "", ...rest] = pathname.split("/");
  let root: CID;
  try {
    root = CID.parse(decodeURIComponent(first));
  } catch {
    throw new GatewayError(400, `invalid path "${pathname}": invalid cid`);
  }
  const segments: string[] = [];
  for (const raw of rest) {
    if (raw === "") continue;
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      throw new GatewayError(400, `invalid path "${pathname}"`);
    }
    if (segment.includes("/")) throw new GatewayError(404, `no link named "${segment}"`);
    segments.push(segment);
  }
  return { root, segments };
}

/** boxo's `setContentDispositionHeader`. */
function contentDisposition(filename: string, download: boolean): string {
  const asciiName = encodeURIComponent(filename.replace(/[^\x20-\x7e]/g, "_"));
  return `${download ? "attachment" : "inline"}; filename="${asciiName}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

async function firstBytes(content: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of content) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function serveFile(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  blocks: Pick<FsBlockstore, "get">,
): Promise<void> {
  const { root, segments } = parsePath(url.pathname);
  const path = [root.toString(), ...segments].join("/");
  const entry = await exporter(path, blocks);
  // The exporter stops at a file and hands it back with the rest of the path unresolved.
  if (entry.path.split("/").filter(Boolean).length !== segments.length + 1) {
    throw new GatewayError(404, `no link named "${segments.at(-1)}" under ${entry.cid}`);
  }
  if (entry.type === "directory") {
    throw new GatewayError(404, `${url.pathname} is a directory: this stand-in serves files only`);
  }
  if (entry.type !== "file" && entry.type !== "raw" && entry.type !== "identity") {
    throw new GatewayError(404, `${url.pathname} is not a UnixFS file`);
  }
  const size = Number(entry.size);
  const filename = url.searchParams.get("filename") ?? "";
  const headers: OutgoingHttpHeaders = {
    ...CORS,
    "Cache-Control": IMMUTABLE,
    Etag: `"${entry.cid}"`,
    "X-Ipfs-Path": url.pathname,
    "Accept-Ranges": "bytes",
  };
  if (filename !== "") {
    headers["Content-Disposition"] = contentDisposition(
      filename,
      url.searchParams.get("download") === "true",
    );
  }
  const ifNoneMatch = req.headers["if-none-match"];
  if (ifNoneMatch?.split(",").some((tag) => [headers.Etag, `W/${headers.Etag}`, "*"].includes(tag.trim()))) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  // The first bytes before the headers: a missing block then is a 404, not a cut stream.
  const head =
    size === 0 ? new Uint8Array(0) : await firstBytes(entry.content({ length: Math.min(size, SNIFF_BYTES) }));
  // boxo answers an empty file 200 `text/plain`, whatever the range.
  headers["Content-Type"] =
    size === 0 ? "text/plain" : gatewayContentType(filename || (segments.at(-1) ?? ""), head);
  const range = size === 0 ? ({ kind: "whole" } as const) : parseRange(req.headers.range, size);
  if (range.kind === "unsatisfiable" || range.kind === "invalid") {
    res.writeHead(416, {
      ...CORS,
      "Content-Type": "text/plain; charset=utf-8",
      ...(range.kind === "unsatisfiable" ? { "Content-Range": `bytes */${size}` } : {}),
    });
    res.end(range.kind === "unsatisfiable" ? "invalid range: failed to overlap\n" : "invalid range\n");
    return;
  }
  const start = range.kind === "part" ? range.start : 0;
  const length = range.kind === "part" ? range.end - range.start + 1 : size;
  headers["Content-Length"] = String(length);
  if (range.kind === "part") headers["Content-Range"] = `bytes ${range.start}-${range.end}/${size}`;
  res.writeHead(range.kind === "part" ? 206 : 200, headers);
  if (req.method === "HEAD" || length === 0) {
    res.end();
    return;
  }
  for await (const chunk of entry.content({ offset: start, length })) {
    if (!res.write(chunk)) await new Promise((resolve) => res.once("drain", resolve));
  }
  res.end();
}

/** Answers a request under `/ipfs/`; every failure is a plain-text answer here, never the RPC's JSON. */
export async function serveGateway(
  req: IncomingMessage,
  res: ServerResponse,
  blocks: Pick<FsBlockstore, "get">,
): Promise<void> {
  const url = new URL(req.url ?? "/", "http://localhost");
  try {
    if (req.method === "OPTIONS") {
      res.writeHead(200, CORS);
      res.end();
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      throw new GatewayError(405, `method ${req.method} not allowed: read only access`);
    }
    await serveFile(req, res, url, blocks);
  } catch (error) {
    if (res.headersSent) {
      res.destroy(error instanceof Error ? error : undefined);
      return;
    }
    const status = error instanceof GatewayError ? error.status : isNotFound(error) ? 404 : 500;
    const message = error instanceof Error ? error.message : String(error);
    res.writeHead(status, {
      ...CORS,
      "Content-Type": "text/plain; charset=utf-8",
      ...(status === 405 ? { Allow: "GET, HEAD, OPTIONS" } : {}),
    });
    res.end(req.method === "HEAD" ? undefined : `${message}\n`);
  }
}
