import { AppError, errors, isAppError } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import { failureHeaders } from "../src/amqp-bus.ts";
import { decodeBody, encodeBody } from "../src/codec.ts";
import {
  carriedHeaders,
  compactHeaders,
  errorReply,
  Header,
  numberHeader,
  readReply,
  stringHeader,
  successReply,
} from "../src/headers.ts";

/** What the wire does to a reply: encode, decode. */
function roundTrip(parts: { envelope: unknown; headers: Record<string, unknown> }) {
  const { body, contentType } = encodeBody(parts.envelope);
  return readReply(decodeBody(body, contentType), parts.headers);
}

describe("reply mapping", () => {
  it("carries the data of a success in the envelope", () => {
    const parts = successReply({ id: 3 });
    expect(parts.envelope).toEqual({ data: { id: 3 }, success: true, message: null });
    expect(parts.headers).toEqual({});
    expect(roundTrip(parts)).toEqual({ data: { id: 3 }, message: null });
  });

  it("carries a success's message with its data", () => {
    const parts = successReply({ id: 4 }, "Saved, but the mail could not be sent.");
    expect(parts.envelope).toEqual({
      data: { id: 4 },
      success: true,
      message: "Saved, but the mail could not be sent.",
    });
    expect(roundTrip(parts)).toEqual({ data: { id: 4 }, message: "Saved, but the mail could not be sent." });
  });

  it("rehydrates an AppError with the same kind, code, message and details", () => {
    const original = errors.conflict("USER_EMAIL_TAKEN", "That e-mail is taken.", {
      details: [{ path: "/mailAddress", message: "taken" }],
    });
    const parts = errorReply(original);
    expect(parts.envelope).toEqual({ data: null, success: false, message: "That e-mail is taken." });
    expect(parts.headers[Header.ERROR_KIND]).toBe("conflict");
    expect(parts.headers[Header.ERROR_CODE]).toBe("USER_EMAIL_TAKEN");
    const outcome = roundTrip(parts);
    if (!("error" in outcome)) throw new Error("expected an error");
    expect(isAppError(outcome.error)).toBe(true);
    expect(outcome.error.kind).toBe("conflict");
    expect(outcome.error.code).toBe("USER_EMAIL_TAKEN");
    expect(outcome.error.message).toBe("That e-mail is taken.");
    expect(outcome.error.details).toEqual([{ path: "/mailAddress", message: "taken" }]);
    expect(outcome.error.status).toBe(409);
  });

  it("never puts the cause of an error on the wire", () => {
    const parts = errorReply(
      new AppError("internal", "INTERNAL", "An unexpected error occurred.", {
        cause: new Error("db password wrong"),
      }),
    );
    expect(JSON.stringify(parts)).not.toContain("password");
  });

  it("drops oversized details instead of failing the reply", () => {
    const parts = errorReply(errors.validation("VALIDATION_FAILED", "bad", { details: "x".repeat(100_000) }));
    expect(parts.headers[Header.ERROR_DETAILS]).toBeUndefined();
    expect(parts.headers[Header.ERROR_KIND]).toBe("validation");
  });

  it("treats an unknown kind or a non-envelope as internal", () => {
    const unknownKind = readReply(
      { data: null, success: false, message: "m" },
      { [Header.ERROR_KIND]: "weird" },
    );
    expect("error" in unknownKind && unknownKind.error.kind).toBe("internal");
    const notEnvelope = readReply({ hello: 1 }, {});
    expect("error" in notEnvelope && notEnvelope.error.kind).toBe("internal");
  });
});

describe("headers", () => {
  it("drops undefined values, which AMQP tables cannot hold", () => {
    expect(compactHeaders({ a: 1, b: undefined, c: null })).toEqual({ a: 1, c: null });
  });

  it("does not carry broker-managed headers to a copy", () => {
    const carried = carriedHeaders({
      "x-death": [{ count: 1 }],
      "x-first-death-reason": "expired",
      "x-stream-offset": 4,
      "x-request-id": "r1",
      [Header.ATTEMPT]: 2,
    });
    expect(carried).toEqual({ "x-request-id": "r1", [Header.ATTEMPT]: 2 });
  });

  it("reads numbers and strings leniently", () => {
    expect(numberHeader({ a: 5, b: "7", c: "x", d: BigInt(9) }, "a")).toBe(5);
    expect(numberHeader({ b: "7" }, "b")).toBe(7);
    expect(numberHeader({ c: "x" }, "c")).toBeUndefined();
    expect(numberHeader({ d: BigInt(9) }, "d")).toBe(9);
    expect(stringHeader({ s: Buffer.from("buf") }, "s")).toBe("buf");
    expect(stringHeader({}, "s")).toBeUndefined();
  });

  it("describes a failure for the dead-letter queue", () => {
    expect(failureHeaders(errors.notFound("PROJECT_NOT_FOUND", "No such project."))).toEqual({
      [Header.LAST_ERROR]: "No such project.",
      [Header.LAST_ERROR_KIND]: "not_found",
      [Header.LAST_ERROR_CODE]: "PROJECT_NOT_FOUND",
    });
    const plain = failureHeaders(new TypeError("x is undefined"));
    expect(plain[Header.LAST_ERROR]).toBe("TypeError: x is undefined");
    expect(plain[Header.LAST_ERROR_KIND]).toBe("internal");
    expect(String(failureHeaders(new Error("y".repeat(5000)))[Header.LAST_ERROR]).length).toBe(1000);
  });
});
