import Type from "typebox";
import { describe, expect, it } from "vitest";
import {
  AuthRpc,
  PERSONAL,
  ProjectsRpc,
  personal,
  personalKindOf,
  personalPaths,
  pseudonymizer,
  redactorOf,
  UsersEvents,
  UsersRpc,
  UserUpdate,
  validatorOf,
} from "./index.ts";

const KEY = "a test key of the journal";
const pseudonymize = pseudonymizer(KEY);
const email = (value: string) => pseudonymize("email", value);
const name = (value: string) => pseudonymize("name", value);

const caller = {
  userId: 1,
  username: "ada",
  address: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
  role: "Base",
};
const ada = {
  id: 1,
  name: "Ada",
  surname: "Lovelace",
  address: caller.address,
  mailAddress: "ada@example.com",
  username: "ada",
  role: "Base",
  invitations: [{ id: 3, projectID: 4, userID: 1, role: "Editor", isAccepted: false }],
};
const bob = {
  ...ada,
  id: 2,
  name: null,
  surname: "Babbage",
  mailAddress: null,
  username: "bob",
  invitations: null,
};

/** Runs the redactor of a schema that has personal fields. */
function redact(schema: Parameters<typeof redactorOf>[0], value: unknown) {
  const redactor = redactorOf(schema);
  if (!redactor) throw new Error("expected a redactor");
  return redactor(value, pseudonymize);
}

describe("personal()", () => {
  it("annotates a copy, keeping the schema's type, modifiers and validation", () => {
    const plain = Type.String({ maxLength: 5 });
    const annotated = personal("email", plain);
    expect(personalKindOf(annotated)).toBe("email");
    expect(personalKindOf(plain)).toBeUndefined();
    expect(JSON.stringify(annotated)).toBe(JSON.stringify(plain));
    expect(validatorOf(annotated).check("123456")).toBe(false);
    // An optional field stays optional, annotated inside or outside the modifier.
    expect(UserUpdate.required ?? []).toEqual([]);
    const inside = Type.Object({ a: Type.Optional(personal("name", Type.String())) });
    const outside = Type.Object({ a: personal("name", Type.Optional(Type.String())) });
    expect(validatorOf(inside).check({})).toBe(true);
    expect(validatorOf(outside).check({})).toBe(true);
  });

  it("is read from a plain JSON schema too; an unknown kind is refused when compiled", () => {
    const raw = Type.Unsafe<unknown>({
      type: "object",
      properties: { ip: { type: "string", [PERSONAL]: "ip" } },
    });
    expect(personalPaths(raw)).toEqual([{ path: "/ip", kind: "ip" }]);
    const wrong = Type.Unsafe<unknown>({ type: "object", properties: { phone: { [PERSONAL]: "phone" } } });
    expect(() => redactorOf(wrong)).toThrow(/x-personal/);
  });
});

describe("redactorOf", () => {
  it("is null for a schema with nothing personal, and compiled once per schema", () => {
    expect(redactorOf(UsersRpc.count.request)).toBeNull();
    expect(redactorOf(UsersRpc.count.response)).toBeNull();
    expect(redactorOf(ProjectsRpc.list.response)).toBeNull();
    expect(redactorOf(UsersRpc.get.response)).toBe(redactorOf(UsersRpc.get.response));
  });

  it("replaces personal fields of nested objects, and nothing else", () => {
    const request = { caller, user: { name: "Ada", username: "ada2", mailAddress: "Ada@Example.com" } };
    const { value, paths } = redact(UsersRpc.update.request, request);
    expect(value).toEqual({
      caller,
      user: { name: name("Ada"), username: "ada2", mailAddress: email("ada@example.com") },
    });
    expect(paths).toEqual(["/user/name", "/user/mailAddress"]);
  });

  it("walks arrays of objects; null stays null, absent stays absent", () => {
    const { name: _, ...nameless } = bob;
    const { value, paths } = redact(UsersRpc.list.response, [ada, nameless]);
    expect(paths).toEqual(["/0/name", "/0/surname", "/0/mailAddress", "/1/surname"]);
    const [first, second] = value as Array<Record<string, unknown>>;
    expect(first).toMatchObject({
      name: name("Ada"),
      mailAddress: email("ada@example.com"),
      username: "ada",
    });
    expect(second).toMatchObject({ surname: name("Babbage"), mailAddress: null, invitations: null });
    expect(second).not.toHaveProperty("name");
    const update = redact(UsersRpc.update.request, { caller, user: { mailAddress: null } });
    expect(update).toEqual({ value: { caller, user: { mailAddress: null } }, paths: [] });
  });

  it("replaces a nonce, an integer, and a client's IP", () => {
    expect(redact(AuthRpc.nonce.response, 734_211)).toEqual({ value: "[nonce]", paths: ["/"] });
    const { value, paths } = redact(AuthRpc.nonce.request, {
      address: caller.address,
      origin: { ip: "10.1.2.3" },
    });
    expect(value).toEqual({ address: caller.address, origin: { ip: pseudonymize("ip", "10.1.2.3") } });
    expect(paths).toEqual(["/origin/ip"]);
  });

  it("finds the personal fields of unions (Nullable), events and the unchecked co-owner list", () => {
    expect(redact(UsersRpc.byUsername.response, null)).toEqual({ value: null, paths: [] });
    expect(redact(UsersRpc.byUsername.response, ada).paths).toEqual(["/name", "/surname", "/mailAddress"]);
    const changed = { userId: 1, address: caller.address, mailAddress: "new@example.com" };
    expect(redact(UsersEvents.emailChanged.payload, changed).value).toEqual({
      ...changed,
      mailAddress: email("new@example.com"),
    });
    expect(redact(ProjectsRpc.coOwners.response, [ada]).paths).toEqual([
      "/0/name",
      "/0/surname",
      "/0/mailAddress",
    ]);
  });

  it("returns a deep copy and never changes its input", () => {
    const input = structuredClone([ada, bob]);
    const frozen = deepFreeze(structuredClone(input));
    const { value } = redact(UsersRpc.list.response, frozen);
    expect(frozen).toEqual(input);
    const [first] = value as Array<typeof ada>;
    expect(first!.invitations).toEqual(ada.invitations);
    expect(first!.invitations).not.toBe(frozen[0]!.invitations);
  });

  it("does not throw on values of another shape, and still replaces what sits at a personal field", () => {
    const schema = UsersRpc.list.response;
    for (const odd of ["text", 3, {}, [null, 1, "x", []], [{ mailAddress: { nested: "ada@example.com" } }]]) {
      expect(() => redact(schema, odd)).not.toThrow();
    }
    expect(redact(schema, [{ name: 42 }]).value).toEqual([{ name: name("42") }]);
    expect(redact(UsersRpc.update.request, { caller: "nobody", user: [] })).toEqual({
      value: { caller: "nobody", user: [] },
      paths: [],
    });
  });
});

describe("redactorOf on schema shapes", () => {
  const Email = personal("email", Type.String());

  it("walks records, additional properties and tuples", () => {
    const record = Type.Record(Type.String(), Email);
    expect(redact(record, { a: "a@x.io", b: "b@x.io" }).paths).toEqual(["/a", "/b"]);
    const additional = Type.Object({ id: Type.Integer() }, { additionalProperties: Email });
    expect(redact(additional, { id: 1, "a/b": "a@x.io" }).paths).toEqual(["/a~1b"]);
    expect(redact(Type.Tuple([Type.String(), Email]), ["a@x.io", "b@x.io"]).paths).toEqual(["/1"]);
    expect(personalPaths(record)).toEqual([{ path: "/*", kind: "email" }]);
  });

  it("walks the branches of a union of objects that the value fits", () => {
    const Person = Type.Object({ kind: Type.Literal("person"), contact: Email });
    const Service = Type.Object({ kind: Type.Literal("service"), contact: Type.String() });
    const Either = Type.Union([Person, Service]);
    expect(redact(Either, { kind: "person", contact: "a@x.io" }).paths).toEqual(["/contact"]);
    expect(redact(Either, { kind: "service", contact: "ops@x.io" }).paths).toEqual([]);
    const Both = Type.Union([Type.Object({ a: Email }), Type.Object({ b: personal("name", Type.String()) })]);
    expect(redact(Both, { a: "a@x.io", b: "Ada" }).paths).toEqual(["/a", "/b"]);
  });

  it("follows $ref into cyclic schemas", () => {
    const Tree = Type.Cyclic(
      { Node: Type.Object({ mail: Email, children: Type.Array(Type.Ref("Node")) }) },
      "Node",
    );
    const tree = { mail: "a@x.io", children: [{ mail: "b@x.io", children: [] }] };
    expect(redact(Tree, tree).paths).toEqual(["/mail", "/children/0/mail"]);
    expect(personalPaths(Tree)).toEqual([
      { path: "/mail", kind: "email" },
      { path: "/children/*/mail", kind: "email" },
    ]);
    const Plain = Type.Cyclic({ Node: Type.Object({ children: Type.Array(Type.Ref("Node")) }) }, "Node");
    expect(redactorOf(Plain)).toBeNull();
  });
});

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}
