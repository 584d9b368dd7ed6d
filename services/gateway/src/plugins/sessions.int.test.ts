import { AuthRpc, sessionKey } from "@fundraise/protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../test/harness.ts";

// Revocation survives Redis (rules.md §7.9): a session hash Redis lost is rebuilt by the auth service
// from Postgres, and until it is, signed-in routes refuse (fail closed). The auth service is played by the
// in-memory bus here; services/auth tests the rebuild itself, e2e the whole path.
let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(() => h?.close());

const getUser = (token: string) =>
  h.app.inject({ method: "GET", url: "/user/get", headers: { authorization: `Bearer ${token}` } });

describe("a session hash missing from Redis", () => {
  it("is asked of the auth service: a revocation it kept refuses the token (401)", async () => {
    const asked: number[] = [];
    await h.bus.serve(AuthRpc.rebuildSession, async ({ userId }) => {
      asked.push(userId);
      return { role: "Blacklist" as const, version: 3, revokedBelow: 3, deleted: false };
    });
    const res = await getUser(await h.signer.sign({ userId: 41, role: "Admin", sv: 2 }));
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({
      data: null,
      success: false,
      message: "This token is no longer valid; sign in again.",
    });
    expect(asked).toEqual([41]);
  });

  it("applies the rebuilt role over the token's claim", async () => {
    await h.bus.serve(AuthRpc.rebuildSession, async () => ({
      role: "Base" as const,
      version: 1,
      revokedBelow: 0,
      deleted: false,
    }));
    const res = await h.app.inject({
      method: "GET",
      url: "/user/getall",
      headers: { authorization: `Bearer ${await h.signer.sign({ userId: 42, role: "Admin" })}` },
    });
    expect(res.statusCode).toBe(403);
  });

  it("fails closed with 503 while the auth service cannot rebuild it", async () => {
    await h.bus.serve(AuthRpc.rebuildSession, async () => {
      throw new Error("auth is down");
    });
    const res = await getUser(await h.signer.sign({ userId: 43, role: "Base" }));
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ success: false, message: "Sessions cannot be checked right now." });
  });

  it("is not asked for while the hash exists", async () => {
    let asked = 0;
    await h.bus.serve(AuthRpc.rebuildSession, async () => {
      asked += 1;
      return { role: null, version: 0, revokedBelow: 0, deleted: false };
    });
    await h.redis.hset(sessionKey(h.prefix, 44), { role: "Viewer", version: "1" });
    const res = await h.app.inject({
      method: "GET",
      url: "/user/getall",
      headers: { authorization: `Bearer ${await h.signer.sign({ userId: 44, role: "Admin" })}` },
    });
    expect(res.statusCode).toBe(403);
    expect(asked).toBe(0);
  });
});
