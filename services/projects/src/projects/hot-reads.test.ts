import { describe, expect, it } from "vitest";
import { createHotReads } from "./hot-reads.ts";
import type { ProjectDtoOut } from "./project.mapper.ts";
import { scopeOf } from "./visibility.ts";

const anonymous = scopeOf(null);
const list = (n: number) => [{ projectID: n }] as unknown as ProjectDtoOut[];

function counter() {
  let version = 1;
  let loads = 0;
  const hot = createHotReads({ version: async () => version, maxEntries: 2 });
  return {
    hot,
    bump: () => version++,
    load: async () => list(++loads),
    loads: () => loads,
  };
}

describe("hot reads: lists kept against the project table's version", () => {
  it("answers from memory while the version holds, and loads again once it moved", async () => {
    const c = counter();
    expect(await c.hot.read(anonymous, "list", c.load)).toEqual(list(1));
    expect(await c.hot.read(anonymous, "list", c.load)).toEqual(list(1));
    expect(c.loads()).toBe(1);
    c.bump();
    expect(await c.hot.read(anonymous, "list", c.load)).toEqual(list(2));
  });

  it("concurrent misses share one load; a failed load is not kept", async () => {
    const c = counter();
    const both = await Promise.all([
      c.hot.read(anonymous, "top", c.load),
      c.hot.read(anonymous, "top", c.load),
    ]);
    expect(both).toEqual([list(1), list(1)]);
    expect(c.loads()).toBe(1);
    c.bump();
    await expect(c.hot.read(anonymous, "top", () => Promise.reject(new Error("db down")))).rejects.toThrow(
      "db down",
    );
    expect(await c.hot.read(anonymous, "top", c.load)).toEqual(list(2));
  });

  it("never caches a list that depends on the caller's memberships; scopes and keys are apart", async () => {
    const c = counter();
    const member = scopeOf({ userId: 7, username: "u", address: "0x01", role: "Base" });
    await c.hot.read(member, "list", c.load);
    await c.hot.read(member, "list", c.load);
    expect(c.loads()).toBe(2);
    await c.hot.read(scopeOf({ userId: 8, username: "v", address: "0x02", role: "Viewer" }), "list", c.load);
    await c.hot.read(anonymous, "list", c.load);
    await c.hot.read(anonymous, "status:Approved", c.load);
    expect(c.loads()).toBe(5);
  });
});
