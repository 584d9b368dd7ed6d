import { ErrorCode, errors } from "@fundraise/protocol";
import { Encoder } from "cbor-x";

export const JSON_CONTENT_TYPE = "application/json";
export const CBOR_CONTENT_TYPE = "application/cbor";

// Plain CBOR byte strings (no tag 64) and plain maps: any CBOR decoder reads them, and bytes come back as bytes.
const cbor = new Encoder({ useRecords: false, mapsAsObjects: true, tagUint8Array: false });

const MAX_DEPTH = 64;

/** True when a Uint8Array (Buffer included) sits anywhere in the value: JSON would mangle it. */
export function containsBinary(value: unknown, depth = 0): boolean {
  if (value instanceof Uint8Array) return true;
  if (value === null || typeof value !== "object" || depth > MAX_DEPTH) return false;
  if (Array.isArray(value)) return value.some((item) => containsBinary(item, depth + 1));
  for (const key in value) {
    if (containsBinary((value as Record<string, unknown>)[key], depth + 1)) return true;
  }
  return false;
}

export interface EncodedBody {
  body: Buffer;
  contentType: string;
}

/** JSON unless the value carries bytes; then CBOR, so file uploads are not inflated or corrupted. */
export function encodeBody(value: unknown): EncodedBody {
  if (containsBinary(value)) return { body: cbor.encode(value), contentType: CBOR_CONTENT_TYPE };
  // JSON.stringify(undefined) is undefined, not a string: send it as null, as JSON has no undefined.
  return { body: Buffer.from(JSON.stringify(value) ?? "null", "utf8"), contentType: JSON_CONTENT_TYPE };
}

/** The inverse of encodeBody, chosen by content type; a body that does not parse is a validation error. */
export function decodeBody(body: Buffer, contentType: string | undefined): unknown {
  const type = (contentType ?? JSON_CONTENT_TYPE).split(";")[0]!.trim().toLowerCase();
  if (type === CBOR_CONTENT_TYPE) {
    try {
      return cbor.decode(body);
    } catch (cause) {
      throw errors.validation(ErrorCode.VALIDATION_FAILED, "The message body is not valid CBOR.", { cause });
    }
  }
  if (type === JSON_CONTENT_TYPE) {
    try {
      return JSON.parse(body.toString("utf8"));
    } catch (cause) {
      throw errors.validation(ErrorCode.MALFORMED_JSON, "The message body is not valid JSON.", { cause });
    }
  }
  throw errors.validation(ErrorCode.VALIDATION_FAILED, `Unsupported content type "${type}".`);
}
