/**
 * A file's Content-Type as Kubo's gateway (boxo) gives it: by the name's extension first (Go's
 * `mime.TypeByExtension`, its built-in table), else by the first bytes with gabriel-vasile/mimetype, the
 * detector boxo uses since kubo#7252 (it reads at most 4096 bytes). Project directories name their
 * entries `whitepaper` and `image`, with no extension, so the bytes decide. Only mimetype's common
 * signatures are here, in its order: ZIP, PDF, PNG, JPEG, GIF, WebP, GZIP, then text (HTML, XML, plain);
 * anything else is `application/octet-stream`. Where mimetype differs from Go's `http.DetectContentType`,
 * mimetype wins: GZIP is `application/gzip`, `%PDF-` counts anywhere in the first 1024 bytes. The text
 * types mimetype tells apart beyond HTML and XML (JSON, CSV, SVG, scripts, …) are plain text here, and
 * the charset comes from a UTF-8 BOM or the bytes (an XML `encoding` or an HTML `<meta>` is not read).
 */

/** The most bytes the detector looks at. */
export const SNIFF_BYTES = 4096;

/** Go's built-in extension table (`mime.TypeByExtension` without the system's mime.types files). */
const BY_EXTENSION: Record<string, string> = {
  ".avif": "image/avif",
  ".css": "text/css; charset=utf-8",
  ".gif": "image/gif",
  ".htm": "text/html; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".jpeg": "image/jpeg",
  ".jpg": "image/jpeg",
  ".js": "text/javascript; charset=utf-8",
  ".json": "application/json",
  ".mjs": "text/javascript; charset=utf-8",
  ".pdf": "application/pdf",
  ".png": "image/png",
  ".svg": "image/svg+xml",
  ".wasm": "application/wasm",
  ".webp": "image/webp",
  ".xml": "text/xml; charset=utf-8",
};

/** The type Go's `mime.TypeByExtension` gives this file name's extension (case-insensitive), or "". */
export function typeByExtension(name: string): string {
  const base = name.slice(name.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  if (dot < 0) return "";
  return BY_EXTENSION[base.slice(dot).toLowerCase()] ?? "";
}

const startsWith = (bytes: Uint8Array, prefix: readonly number[], at = 0) =>
  bytes.length >= at + prefix.length && prefix.every((b, i) => bytes[at + i] === b);
const ascii = (text: string) => [...text].map((c) => c.charCodeAt(0));

/** ZIP's local, empty-archive and spanned headers (`PK\3\4`, `PK\5\6`, `PK\7\8`). */
function isZip(b: Uint8Array): boolean {
  return (
    b.length > 3 && b[0] === 0x50 && b[1] === 0x4b && [3, 5, 7].includes(b[2]!) && [4, 6, 8].includes(b[3]!)
  );
}

function isPdf(b: Uint8Array): boolean {
  return Buffer.from(b.subarray(0, 1024)).includes("%PDF-");
}

const MAGIC: [string, (b: Uint8Array) => boolean][] = [
  ["application/zip", isZip],
  ["application/pdf", isPdf],
  ["image/png", (b) => startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])],
  ["image/jpeg", (b) => startsWith(b, [0xff, 0xd8, 0xff])],
  ["image/gif", (b) => startsWith(b, ascii("GIF87a")) || startsWith(b, ascii("GIF89a"))],
  ["image/webp", (b) => b.length > 12 && startsWith(b, ascii("RIFF")) && startsWith(b, ascii("WEBP"), 8)],
  ["application/gzip", (b) => startsWith(b, [0x1f, 0x8b])],
];

/** A binary data byte (WHATWG mime sniffing), which no text has. */
const isBinaryByte = (b: number) =>
  b <= 0x08 || b === 0x0b || (b >= 0x0e && b <= 0x1a) || (b >= 0x1c && b <= 0x1f);

const HTML_TAGS = [
  "<!DOCTYPE HTML",
  "<HTML",
  "<HEAD",
  "<SCRIPT",
  "<IFRAME",
  "<H1",
  "<DIV",
  "<FONT",
  "<TABLE",
  "<A",
  "<STYLE",
  "<TITLE",
  "<B",
  "<BODY",
  "<BR",
  "<P",
  "<!--",
];

const isSpace = (b: number | undefined) => b === 0x09 || b === 0x0a || b === 0x0c || b === 0x0d || b === 0x20;

/** After leading whitespace, one of `tags` (letters in any case), then whitespace or `>` (mimetype's markup). */
function startsWithTag(bytes: Uint8Array, tags: string[]): boolean {
  let at = 0;
  while (isSpace(bytes[at])) at++;
  return tags.some((tag) => {
    if (bytes.length < at + tag.length + 1) return false;
    for (let i = 0; i < tag.length; i++) {
      const want = tag.charCodeAt(i);
      const got = bytes[at + i]!;
      if ((want >= 0x41 && want <= 0x5a ? got & 0xdf : got) !== want) return false;
    }
    const next = bytes[at + tag.length];
    return isSpace(next) || next === 0x3e;
  });
}

/** The charset mimetype gives plain text: UTF-8 when it decodes (a rune cut at the end aside). */
function plainCharset(b: Uint8Array): string {
  let end = b.length;
  // Drop a multi-byte sequence cut by the read limit.
  for (let i = b.length - 1; i >= 0 && i > b.length - 4; i--) {
    const byte = b[i]!;
    if (byte < 0x80) break;
    if ((byte & 0xc0) !== 0x80) {
      end = i;
      break;
    }
  }
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(b.subarray(0, end));
    return "utf-8";
  } catch {
    return b.some((byte) => byte >= 0x80 && byte <= 0x9f) ? "windows-1252" : "iso-8859-1";
  }
}

/** The type mimetype detects in a file's first bytes (give it at least the first `SNIFF_BYTES`). */
export function sniffContentType(head: Uint8Array): string {
  const bytes = head.subarray(0, SNIFF_BYTES);
  if (bytes.length === 0) return "text/plain";
  for (const [type, matches] of MAGIC) if (matches(bytes)) return type;
  const bom = startsWith(bytes, [0xef, 0xbb, 0xbf]);
  if (!bom && bytes.some(isBinaryByte)) return "application/octet-stream";
  const charset = bom ? "utf-8" : plainCharset(bytes);
  const markup = bom ? bytes.subarray(3) : bytes;
  if (startsWithTag(markup, HTML_TAGS)) return `text/html; charset=${charset}`;
  if (startsWithTag(markup, ["<?XML"])) return `text/xml; charset=${charset}`;
  return `text/plain; charset=${charset}`;
}

/**
 * The Content-Type Kubo's gateway answers for a file named `name` (the last path segment, or `?filename=`)
 * whose content starts with `head`: HTML without its charset, the browser finds it (kubo#2203).
 */
export function gatewayContentType(name: string, head: Uint8Array): string {
  const type = typeByExtension(name) || sniffContentType(head);
  return type.startsWith("text/html;") ? "text/html" : type;
}
