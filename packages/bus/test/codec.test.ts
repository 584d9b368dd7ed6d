import { isAppError } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import { CBOR_CONTENT_TYPE, decodeBody, encodeBody, JSON_CONTENT_TYPE } from "../src/codec.ts";

describe("codec", () => {
  it("sends plain payloads as JSON", () => {
    const { body, contentType } = encodeBody({ a: 1, b: ["x", null], c: { d: true } });
    expect(contentType).toBe(JSON_CONTENT_TYPE);
    expect(body.toString("utf8")).toBe('{"a":1,"b":["x",null],"c":{"d":true}}');
    expect(decodeBody(body, contentType)).toEqual({ a: 1, b: ["x", null], c: { d: true } });
  });

  it("sends undefined as JSON null", () => {
    const { body, contentType } = encodeBody(undefined);
    expect(decodeBody(body, contentType)).toBeNull();
  });

  it("ignores content-type parameters and defaults to JSON", () => {
    expect(decodeBody(Buffer.from('{"x":1}'), "application/json; charset=utf-8")).toEqual({ x: 1 });
    expect(decodeBody(Buffer.from('{"x":1}'), undefined)).toEqual({ x: 1 });
  });

  it("rejects malformed bodies and unknown content types as validation errors", () => {
    const malformed = catchError(() => decodeBody(Buffer.from("{nope"), JSON_CONTENT_TYPE));
    expect(isAppError(malformed) && malformed.kind).toBe("validation");
    expect(isAppError(malformed) && malformed.code).toBe("MALFORMED_JSON");
    const unknown = catchError(() => decodeBody(Buffer.from("x"), "text/plain"));
    expect(isAppError(unknown) && unknown.kind).toBe("validation");
  });

  it("refuses a body of another content type (CBOR included) as a validation error", () => {
    const cbor = catchError(() => decodeBody(Buffer.from([0xa1, 0x61, 0x78, 0x01]), CBOR_CONTENT_TYPE));
    expect(isAppError(cbor) && cbor.kind).toBe("validation");
    expect(isAppError(cbor) && cbor.code).toBe("VALIDATION_FAILED");
    expect(isAppError(cbor) && cbor.message).toBe('Unsupported content type "application/cbor".');
  });
});

function catchError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error("expected an error");
}
