import { isAppError } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import {
  CBOR_CONTENT_TYPE,
  containsBinary,
  decodeBody,
  encodeBody,
  JSON_CONTENT_TYPE,
} from "../src/codec.ts";

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

  it("switches to CBOR when bytes appear anywhere, and bytes come back as bytes", () => {
    const file = new Uint8Array(300).map((_, i) => i % 256);
    const value = {
      name: "a.pdf",
      nested: [{ part: Buffer.from([7, 8, 9]) }],
      file,
      empty: new Uint8Array(0),
    };
    const { body, contentType } = encodeBody(value);
    expect(contentType).toBe(CBOR_CONTENT_TYPE);
    // Raw bytes, not base64 or an array of numbers: the body is barely larger than the file.
    expect(body.length).toBeLessThan(file.length + 64);
    const decoded = decodeBody(body, contentType) as typeof value;
    expect(decoded.name).toBe("a.pdf");
    expect(decoded.file).toBeInstanceOf(Uint8Array);
    expect([...decoded.file]).toEqual([...file]);
    expect([...(decoded.nested[0]?.part ?? [])]).toEqual([7, 8, 9]);
    expect(decoded.empty).toBeInstanceOf(Uint8Array);
    expect(decoded.empty.byteLength).toBe(0);
  });

  it("finds bytes in nested structures only where they are", () => {
    expect(containsBinary({ a: [{ b: new Uint8Array(1) }] })).toBe(true);
    expect(containsBinary(Buffer.alloc(0))).toBe(true);
    expect(containsBinary({ a: [{ b: "bytes" }], n: null })).toBe(false);
    expect(containsBinary("x")).toBe(false);
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
    const badCbor = catchError(() => decodeBody(Buffer.from([0xff, 0xff, 0x1f]), CBOR_CONTENT_TYPE));
    expect(isAppError(badCbor) && badCbor.kind).toBe("validation");
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
