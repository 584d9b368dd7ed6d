import type { TSchema } from "typebox";
import Type from "typebox";
import { describe, expect, it } from "vitest";
import * as protocol from "./index.ts";
import { defineRpc, EVENTS, personalPaths, RPCS, redactorOf, UsersRpc } from "./index.ts";

describe("catalog", () => {
  it("holds every descriptor the package exports, by name", () => {
    const exported = Object.entries(protocol)
      .filter(([key]) => key.endsWith("Rpc") || key.endsWith("Events"))
      .flatMap(([, group]) => Object.values(group as Record<string, { type: string; name: string }>));
    expect(exported.filter((d) => d.type === "rpc").length).toBe(RPCS.size);
    expect(exported.filter((d) => d.type === "event").length).toBe(EVENTS.size);
    for (const d of exported) expect(d.type === "rpc" ? RPCS.get(d.name) : EVENTS.get(d.name)).toBe(d);
    expect(RPCS.size).toBe(58);
    expect(RPCS.get("users.user.count")).toBe(UsersRpc.count);
  });
});

describe("effects", () => {
  it("are write unless a descriptor says read", () => {
    expect(defineRpc("users.test.thing", { request: Type.Null(), response: Type.Null() }).effect).toBe(
      "write",
    );
    for (const rpc of RPCS.values()) expect(["read", "write"], rpc.name).toContain(rpc.effect);
  });

  it.each([
    ["users.user.count", "read"],
    ["users.user.get", "read"],
    ["users.user.by-ids", "read"],
    ["users.user.update", "write"],
    ["users.user.mark-verified", "write"],
    ["auth.nonce.issue", "write"],
    ["auth.keys.jwks", "read"],
    ["auth.session.rebuild", "read"],
    ["auth.session.apply", "write"],
    ["projects.project.list", "read"],
    ["projects.project.list-tag", "read"],
    ["projects.permission.co-owners", "read"],
    ["projects.project.add", "write"],
    ["projects.project.sync-status", "write"],
    ["projects.user.fence", "write"],
    ["chain.index.progress", "read"],
    ["chain.logs.evaluations", "read"],
    ["projects.content.release", "write"],
  ])("%s is %s", (name, effect) => {
    expect(RPCS.get(name)?.effect).toBe(effect);
  });
});

/** Field names that hold personal data wherever they appear. */
const PERSONAL_NAME = /mail|email|^ip$|nonce|^surname$/i;

/**
 * Fields the pattern finds that are not personal, with the reason. None today: a new entry needs one.
 * (`name` is checked only in a user-like object, so a token's or a project's name is not caught.)
 */
const NOT_PERSONAL: Record<string, string> = {};

/** The paths (as personalPaths writes them) of the fields of a schema that look personal. */
function suspectPaths(schema: unknown, path = "", seen = new Set<unknown>()): string[] {
  if (typeof schema !== "object" || schema === null || seen.has(schema)) return [];
  seen.add(schema);
  const s = schema as Record<string, unknown>;
  const found: string[] = [];
  const properties = (s.properties ?? {}) as Record<string, unknown>;
  const userLike = "username" in properties || "surname" in properties;
  for (const [key, field] of Object.entries(properties)) {
    if (PERSONAL_NAME.test(key) || (key === "name" && userLike)) found.push(`${path}/${key}`);
    found.push(...suspectPaths(field, `${path}/${key}`, seen));
  }
  for (const child of [s.items, s.additionalProperties, ...Object.values(s.patternProperties ?? {})]) {
    found.push(...suspectPaths(child, `${path}/*`, seen));
  }
  for (const branch of [s.anyOf, s.oneOf, s.allOf].flatMap((b) => (Array.isArray(b) ? b : []))) {
    found.push(...suspectPaths(branch, path, seen));
  }
  return found;
}

const journaled: Array<[string, TSchema]> = [
  ...[...RPCS.values()]
    .filter((rpc) => rpc.journal !== false)
    .flatMap(
      (rpc): Array<[string, TSchema]> => [
        [`${rpc.name} request`, rpc.request],
        [`${rpc.name} response`, rpc.response],
      ],
    ),
  ...[...EVENTS.values()].map((event): [string, TSchema] => [event.name, event.payload]),
];

describe("the personal-data guard", () => {
  it.each(journaled)("%s: every field that looks personal is annotated", (what, schema) => {
    const annotated = new Set(personalPaths(schema).map((p) => p.path));
    const missing = suspectPaths(schema).filter(
      (p) => !annotated.has(p) && !(`${what} ${p}` in NOT_PERSONAL),
    );
    expect(missing, what).toEqual([]);
  });

  it("finds what it looks for: the annotated fields of users and auth", () => {
    expect(suspectPaths(UsersRpc.list.response)).toEqual(["/*/name", "/*/surname", "/*/mailAddress"]);
    expect(personalPaths(protocol.AuthRpc.nonce.response)).toEqual([{ path: "/", kind: "nonce" }]);
    expect(personalPaths(protocol.ChainEvents.tokenCreated.payload)).toEqual([]);
  });

  it("compiles a redactor for every schema of the protocol without throwing", () => {
    for (const [, schema] of journaled) expect(() => redactorOf(schema)).not.toThrow();
  });
});
