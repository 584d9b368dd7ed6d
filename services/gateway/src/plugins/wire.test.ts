import Type from "typebox";
import { describe, expect, it } from "vitest";
import { canonicalizeKeys } from "./wire.ts";

const json = <T>(schema: T): T => JSON.parse(JSON.stringify(schema));
const User = Type.Object({ name: Type.String(), mailAddress: Type.String() });

describe("canonicalizeKeys", () => {
  it("renames keys of an object schema to its spelling, keeping unknown keys", () => {
    expect(canonicalizeKeys({ NAME: "a", MailAddress: "b", Extra: 1 }, json(User))).toEqual({
      name: "a",
      mailAddress: "b",
      Extra: 1,
    });
  });

  it("walks the branches of an intersection (allOf)", () => {
    const schema = json(Type.Intersect([User, Type.Object({ surname: Type.String() })]));
    expect(canonicalizeKeys({ Name: "a", MAILADDRESS: "b", SurName: "c" }, schema)).toEqual({
      name: "a",
      mailAddress: "b",
      surname: "c",
    });
  });

  it("walks the branches of unions (anyOf, oneOf), null included", () => {
    const anyOf = json(Type.Union([Type.Null(), Type.Object({ markDown: Type.String() })]));
    expect(canonicalizeKeys({ MARKDOWN: "x" }, anyOf)).toEqual({ markDown: "x" });
    const oneOf = { oneOf: [json(User), json(Type.Object({ projectID: Type.Integer() }))] };
    expect(canonicalizeKeys({ ProjectId: 5, Name: "a" }, oneOf)).toEqual({ projectID: 5, name: "a" });
  });

  it("renames nested objects and array items", () => {
    const schema = json(Type.Object({ users: Type.Array(User), owner: Type.Optional(User) }));
    expect(canonicalizeKeys({ Users: [{ NAME: "a" }], OWNER: { mailaddress: "m" } }, schema)).toEqual({
      users: [{ name: "a" }],
      owner: { mailAddress: "m" },
    });
  });

  it("lets the exact spelling win over a differently-cased duplicate, in any order", () => {
    expect(canonicalizeKeys({ NAME: "upper", name: "exact" }, json(User))).toEqual({ name: "exact" });
    expect(canonicalizeKeys({ name: "exact", NAME: "upper" }, json(User))).toEqual({ name: "exact" });
  });

  it("leaves inherited names alone", () => {
    expect(canonicalizeKeys({ constructor: 1, toString: 2 }, json(User))).toEqual({
      constructor: 1,
      toString: 2,
    });
  });
});
