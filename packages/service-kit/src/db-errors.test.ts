import { ErrorCode } from "@fundraise/protocol";
import { DriverException } from "@mikro-orm/core";
import { describe, expect, it } from "vitest";
import { translateDbError } from "./db-errors.ts";

describe("translateDbError", () => {
  it("a statement on a client whose connection just broke (pg's 'not queryable') is unavailable, not internal", () => {
    const driver = new Error("Client has encountered a connection error and is not queryable");
    const translated = translateDbError(new DriverException(driver)) as { kind?: string; code?: string };
    expect(translated.kind).toBe("unavailable");
    expect(translated.code).toBe(ErrorCode.DB_UNAVAILABLE);
  });

  it("a wrong statement stays what it is", () => {
    const wrong = Object.assign(new Error('column "nope" does not exist'), { code: "42703" });
    expect(translateDbError(wrong)).toBe(wrong);
  });
});
