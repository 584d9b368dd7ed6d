import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { silentLogger } from "@fundraise/service-kit/testing";
import Fastify from "fastify";
import Type from "typebox";
import { describe, expect, it } from "vitest";
import { registerErrorHandling } from "./error-handler.ts";
import {
  bodyNumberProblem,
  INT32_MAX,
  INT32_MIN,
  jsonNumberProblem,
  numberKindOf,
  plainNumberProblem,
  registerPlainNumbers,
} from "./plain-numbers.ts";

describe("plain decimal numbers", () => {
  it("tells integer and number fields apart, through nullable unions", () => {
    expect(numberKindOf(Type.Integer())).toBe("integer");
    expect(numberKindOf(Type.Number())).toBe("number");
    expect(numberKindOf(Type.Union([Type.Null(), Type.Integer()]))).toBe("integer");
    expect(numberKindOf(Type.Integer({ minimum: 0 }))).toBe("integer");
    expect(numberKindOf(Type.Integer({ minimum: -5 }))).toBe("signed");
    expect(numberKindOf(Type.Union([Type.Null(), Type.Integer({ minimum: -1 })]))).toBe("signed");
    expect(numberKindOf(Type.Union([Type.Integer(), Type.Number()]))).toBe("number");
    expect(numberKindOf(Type.Union([Type.Integer(), Type.String()]))).toBeUndefined();
    expect(numberKindOf(Type.String())).toBeUndefined();
    expect(numberKindOf(Type.Boolean())).toBeUndefined();
  });

  it("accepts digits within int32 for integers, a leading minus for signed ones, and one decimal point for numbers", () => {
    for (const ok of ["0", "5", "0005", String(INT32_MAX)])
      expect(plainNumberProblem(ok, "integer")).toBeUndefined();
    for (const bad of ["1e1", "0x10", "+5", " 5", "5 ", "5.0", "-1", "", "2147483648", "12345678901"]) {
      expect(plainNumberProblem(bad, "integer"), bad).toBe(
        `must be a plain decimal integer from 0 to ${INT32_MAX}`,
      );
    }
    for (const ok of ["0", "-0", "5", "-1", "-0005", String(INT32_MIN), String(INT32_MAX)])
      expect(plainNumberProblem(ok, "signed"), ok).toBeUndefined();
    for (const bad of [
      "1e1",
      "-1e1",
      "+5",
      "-+5",
      " 5",
      "- 5",
      "5.0",
      "--1",
      "-",
      "",
      "-2147483649",
      "2147483648",
    ]) {
      expect(plainNumberProblem(bad, "signed"), bad).toBe(
        `must be a plain decimal integer from ${INT32_MIN} to ${INT32_MAX}`,
      );
    }
    for (const ok of ["0", "5", "4.5", "5.0"]) expect(plainNumberProblem(ok, "number")).toBeUndefined();
    for (const bad of ["1e0", ".5", "5.", "-1", "+1", " 1", "Infinity", "NaN", ""]) {
      expect(plainNumberProblem(bad, "number"), bad).toBe("must be a plain decimal number");
    }
  });

  it("takes JSON numbers in range and plain strings for body integers, nothing else", () => {
    for (const ok of [0, 282, INT32_MAX, "282", "0282"])
      expect(jsonNumberProblem(ok, "integer")).toBeUndefined();
    for (const bad of [-1, 282.5, INT32_MAX + 1, "0x11a", " 282", "282e0", "282.0", true, false, [282], {}]) {
      expect(jsonNumberProblem(bad, "integer"), JSON.stringify(bad)).toBe(
        `must be a plain decimal integer from 0 to ${INT32_MAX}`,
      );
    }
    for (const ok of [-1, INT32_MIN, "-1"]) expect(jsonNumberProblem(ok, "signed")).toBeUndefined();
    expect(jsonNumberProblem(INT32_MIN - 1, "signed")).toBeDefined();
    for (const ok of [4.5, 1e3, "4.5"]) expect(jsonNumberProblem(ok, "number")).toBeUndefined();
    for (const bad of [true, "1e3", "4,5"]) expect(jsonNumberProblem(bad, "number")).toBeDefined();
  });

  it("finds the first bad number at any depth of a body, through unions and arrays; null and absent pass", () => {
    const schema = Type.Object({
      projectID: Type.Optional(Type.Union([Type.Null(), Type.Integer()])),
      name: Type.String(),
      members: Type.Optional(Type.Array(Type.Object({ userID: Type.Integer() }))),
      ratings: Type.Optional(Type.Array(Type.Number())),
    });
    expect(
      bodyNumberProblem({ projectID: "282", name: "1e1", members: [{ userID: 5 }] }, schema),
    ).toBeUndefined();
    expect(bodyNumberProblem({ projectID: null, name: "x" }, schema)).toBeUndefined();
    expect(bodyNumberProblem({ name: "x", ratings: [1.5, "2"] }, schema)).toBeUndefined();
    expect(bodyNumberProblem({ projectID: "0x11a" }, schema)).toEqual([
      "/projectID",
      `must be a plain decimal integer from 0 to ${INT32_MAX}`,
    ]);
    expect(bodyNumberProblem({ members: [{ userID: 1 }, { userID: true }] }, schema)).toEqual([
      "/members/1/userID",
      `must be a plain decimal integer from 0 to ${INT32_MAX}`,
    ]);
    expect(bodyNumberProblem({ ratings: ["1e1"] }, schema)).toEqual([
      "/ratings/0",
      "must be a plain decimal number",
    ]);
    // A key the schema does not have is not its field (and is ignored anyway).
    expect(bodyNumberProblem({ other: "0x1" }, schema)).toBeUndefined();
  });

  it("checks query strings as well as paths, repeated values included", async () => {
    const app = Fastify({
      loggerInstance: silentLogger(),
      ajv: { customOptions: { coerceTypes: true } },
    }).withTypeProvider<TypeBoxTypeProvider>();
    registerErrorHandling(app);
    registerPlainNumbers(app);
    app.get(
      "/things",
      {
        schema: {
          querystring: Type.Object({ n: Type.Optional(Type.Integer()), q: Type.Optional(Type.String()) }),
        },
      },
      async (request) => ({ data: request.query, success: true, message: null }),
    );
    const get = (url: string) => app.inject({ method: "GET", url });
    expect((await get("/things?n=12&q=1e1")).json()).toEqual({
      data: { n: 12, q: "1e1" },
      success: true,
      message: null,
    });
    for (const url of ["/things?n=1e1", "/things?n=%2B5", "/things?n=", "/things?n=5&n=0x5"]) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(400);
      expect(res.json(), url).toEqual({
        data: null,
        success: false,
        message: `Invalid querystring: /n must be a plain decimal integer from 0 to ${INT32_MAX}.`,
      });
    }
    await app.close();
  });
});
