// How the journal shows payloads: bytes as their length (what a without-bytes copy keeps), or as their
// length and a short preview (what replay prints).
const MAX_DEPTH = 64;

/** The value with each byte string replaced by its length, `{ $bytes: n }` (no preview of the content). */
export function withoutBytes(value: unknown, depth = 0): unknown {
  if (value instanceof Uint8Array) return { $bytes: value.byteLength };
  if (value === null || typeof value !== "object" || depth > MAX_DEPTH) return value;
  if (Array.isArray(value)) return value.map((item) => withoutBytes(item, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = withoutBytes(item, depth + 1);
  return out;
}

const BYTES_PREVIEW = 64;

/**
 * A printable copy of a decoded payload: bytes become `{ $bytes: length, base64: <first 64 bytes> }` so a
 * journal dump stays readable and bounded.
 */
export function toPrintable(value: unknown, depth = 0): unknown {
  if (value instanceof Uint8Array) {
    return {
      $bytes: value.byteLength,
      base64: Buffer.from(value.buffer, value.byteOffset, Math.min(value.byteLength, BYTES_PREVIEW)).toString(
        "base64",
      ),
    };
  }
  if (value === null || typeof value !== "object" || depth > MAX_DEPTH) return value;
  if (Array.isArray(value)) return value.map((item) => toPrintable(item, depth + 1));
  if (value instanceof Date) return value.toISOString();
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = toPrintable(item, depth + 1);
  return out;
}
