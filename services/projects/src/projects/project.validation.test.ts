import { describe, expect, it } from "vitest";
import { parseMarkdown, parseRating, parseText } from "./project.validation.ts";

describe("ratings", () => {
  it.each([0, 2.5, 5])("%s is a rating", (v) => expect(parseRating(v)).toBe(v));
  it.each([Number.NaN, -1, 5.0001, Number.POSITIVE_INFINITY, -0.0001])("%s is not", (v) =>
    expect(() => parseRating(v)).toThrow(/rating/),
  );
});

describe("free text", () => {
  it("is kept as given, but the NUL character (PostgreSQL's text cannot hold it) is a 400", () => {
    expect(parseMarkdown("# Title\n\ttabs, \u{1F600} and \\0 as text")).toBe(
      "# Title\n\ttabs, \u{1F600} and \\0 as text",
    );
    for (const [path, parse] of [
      ["/markDown", parseMarkdown],
      ["/projectDescription", (text: string) => parseText("/projectDescription", text)],
    ] as const) {
      expect(() => parse("a\u0000b")).toThrow(expect.objectContaining({ kind: "validation" }));
      expect(() => parse("a\u0000b")).toThrow(new RegExp(`${path.slice(1)}: must not contain the NUL`));
    }
  });
});
