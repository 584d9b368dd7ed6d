import { ErrorCode, errors } from "@fundraise/protocol";

export const JSON_CONTENT_TYPE = "application/json";
/** Not a message body: the framing of the bus's RPC batches (rpc-batch.ts) and the journal's batches. */
export const CBOR_CONTENT_TYPE = "application/cbor";

export interface EncodedBody {
  body: Buffer;
  contentType: string;
}

/** Message bodies are JSON: file content goes to IPFS and messages carry its CID. */
export function encodeBody(value: unknown): EncodedBody {
  // JSON.stringify(undefined) is undefined, not a string: send it as null, as JSON has no undefined.
  return { body: Buffer.from(JSON.stringify(value) ?? "null", "utf8"), contentType: JSON_CONTENT_TYPE };
}

/** The inverse of encodeBody; another content type, or a body that does not parse, is a validation error. */
export function decodeBody(body: Buffer, contentType: string | undefined): unknown {
  const type = (contentType ?? JSON_CONTENT_TYPE).split(";")[0]!.trim().toLowerCase();
  if (type !== JSON_CONTENT_TYPE) {
    throw errors.validation(ErrorCode.VALIDATION_FAILED, `Unsupported content type "${type}".`);
  }
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (cause) {
    throw errors.validation(ErrorCode.MALFORMED_JSON, "The message body is not valid JSON.", { cause });
  }
}
