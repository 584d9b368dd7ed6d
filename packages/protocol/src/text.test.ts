import { describe, expect, it } from "vitest";
import {
  emailProblem,
  hasUnprintable,
  isBlankText,
  nameProblem,
  TEXT_PROBLEMS,
  trimText,
  usernameProblem,
} from "./text.ts";

describe("nameProblem", () => {
  it.each(["Ada", "Jean-Paul", "O'Hara", "Zoë", "Ελένη", "山田", "José María", "Ada 🚀", "x".repeat(100)])(
    "accepts %j",
    (value) => expect(nameProblem(value)).toBeUndefined(),
  );

  it.each([
    ["\u202E", "right-to-left override"],
    ["\u202A", "left-to-right embedding"],
    ["\u202C", "pop directional formatting"],
    ["\u2066", "left-to-right isolate"],
    ["\u2069", "pop directional isolate"],
    ["\u200B", "zero-width space"],
    ["\u200C", "zero-width non-joiner"],
    ["\u200D", "zero-width joiner"],
    ["\u2060", "word joiner"],
    ["\uFEFF", "byte order mark"],
    ["\u2028", "line separator"],
    ["\u2029", "paragraph separator"],
    ["\u0000", "NUL"],
    ["\u0007", "bell"],
    ["\n", "line feed"],
    ["\u007F", "delete"],
    ["\u0085", "next line (C1)"],
    ["\u00AD", "soft hyphen"],
    ["\uD800", "lone surrogate"],
  ])("refuses a name holding %j (%s) inside", (char) => {
    expect(nameProblem(`Ada${char}Lovelace`)).toBe(TEXT_PROBLEMS.unprintable);
    expect(hasUnprintable(`Ada${char}`)).toBe(true);
  });

  it.each([
    ["", "empty"],
    ["\u200B", "a zero-width space"],
    ["\u200B\u200C\u200D\u2060\uFEFF", "zero-width characters"],
    ["\u202E\u2066", "bidi controls"],
    ["\u3164", "a Hangul filler"],
    ["\u2800", "a blank Braille pattern"],
    ["\u00A0\u3000", "non-breaking and ideographic spaces"],
  ])("counts %j (%s) as missing", (value) => {
    expect(isBlankText(value)).toBe(true);
    expect(nameProblem(value)).toBe(TEXT_PROBLEMS.required);
  });

  it("bounds the length", () => {
    expect(nameProblem("x".repeat(101))).toBe(TEXT_PROBLEMS.tooLong(100));
  });
});

describe("trimText", () => {
  it("trims spaces of any kind, tabs and line breaks, and nothing else", () => {
    expect(trimText(" \t Ada\u00A0\r\n")).toBe("Ada");
    expect(trimText("\u3000Ada\u3000")).toBe("Ada");
    // Left for the checks to refuse, unlike String.prototype.trim.
    expect(trimText("\uFEFFAda\u2028")).toBe("\uFEFFAda\u2028");
    expect(nameProblem(trimText("Ada\u2028"))).toBe(TEXT_PROBLEMS.unprintable);
  });
});

describe("usernameProblem and emailProblem", () => {
  it("accept plain values", () => {
    expect(usernameProblem("ada.l_1")).toBeUndefined();
    expect(emailProblem("ada@example.org")).toBeUndefined();
  });
  it("refuse invisible and non-ASCII characters", () => {
    expect(usernameProblem("ada\u200B")).toBe(TEXT_PROBLEMS.username);
    expect(usernameProblem("\u200B\u200B\u200B")).toBe(TEXT_PROBLEMS.required);
    expect(usernameProblem("a\u202Eda")).toBe(TEXT_PROBLEMS.username);
    expect(emailProblem("ada\u200B@example.org")).toBe(TEXT_PROBLEMS.email);
    expect(emailProblem("\uFEFF")).toBe(TEXT_PROBLEMS.required);
  });
});
