import { randomBytes } from "node:crypto";
import type { SqlPool } from "@fundraise/outbox";
import { sessionKey } from "@fundraise/protocol";
import { createOrm, createSqlPool, type Orm, silentLogger } from "@fundraise/service-kit";
import { createTestDatabase, type TestDatabase } from "@fundraise/service-kit/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations } from "../db/migrations/index.ts";
import { AUTH_SCHEMA } from "../db/schema.ts";
import { SigningKey } from "../keys/signing-key.entity.ts";
import { EmailVerification } from "../sign-up/email-verification.entity.ts";
import { createSessionStore, type SessionStore, STALE } from "./session-store.ts";

// Revocation survives Redis (rules.md §7.9): Postgres keeps the session state, Redis is rebuilt from it.
let db: TestDatabase;
let orm: Orm;
let redis: Redis;
let pool: SqlPool;
let sessions: SessionStore;
const prefix = `test:sessions:${randomBytes(6).toString("hex")}:`;
const key = (userId: number) => sessionKey(prefix, userId);

beforeAll(async () => {
  db = await createTestDatabase("auth_sessions");
  orm = await createOrm({
    url: db.url,
    schema: AUTH_SCHEMA,
    entities: [SigningKey, EmailVerification],
    migrations,
    log: silentLogger(),
  });
  redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
  pool = createSqlPool(db.url);
  sessions = createSessionStore({ redis, prefix, tokenTtlSeconds: 7200, pool });
});

afterAll(async () => {
  const keys = await redis?.keys(`${prefix}*`);
  if (keys?.length) await redis.del(...keys);
  await redis?.quit();
  await pool?.end();
  await orm?.close();
  await db?.dispose();
});

const address = "0x00000000000000000000000000000000000000aa";
const change = (
  userId: number,
  version: number,
  role: "Admin" | "Base" | "Blacklist" | "Viewer" | null,
  revoke = true,
) => ({
  userId,
  address,
  version,
  role,
  revoke,
  deleted: role === null,
});
const row = async (userId: number) =>
  (
    await pool.query(
      `select role, version::int, revoked_below::int, deleted from auth.session where user_id = $1`,
      [userId],
    )
  ).rows[0];

describe("session store: Postgres behind the Redis hash", () => {
  it("a revocation lost by Redis is rebuilt from Postgres, with the role", async () => {
    await sessions.signIn({ id: 7, role: "Base", version: 1 });
    await sessions.apply(change(7, 2, "Blacklist"));
    const before = await redis.hgetall(key(7));
    await redis.del(key(7));

    const rebuilt = await sessions.rebuild(7);
    expect(rebuilt).toEqual({ role: "Blacklist", version: 2, revokedBelow: 2, deleted: false });
    expect(await redis.hgetall(key(7))).toEqual(before);
    expect(await redis.ttl(key(7))).toBeGreaterThan(7200);
  });

  it("a deleted user's state (no role, deleted) comes back as such", async () => {
    await sessions.signIn({ id: 8, role: "Base", version: 1 });
    await sessions.apply(change(8, 2, null));
    await redis.del(key(8));
    expect(await sessions.rebuild(8)).toEqual({ role: null, version: 2, revokedBelow: 2, deleted: true });
    expect(await redis.hexists(key(8), "role")).toBe(0);
  });

  it("a user with no stored state gets an existing, empty hash (no rebuild on every request)", async () => {
    expect(await sessions.rebuild(9)).toEqual({ role: null, version: 0, revokedBelow: 0, deleted: false });
    expect(await redis.exists(key(9))).toBe(1);
  });

  it("a newer state that reaches Redis during a rebuild is not overwritten by the older copy", async () => {
    await sessions.signIn({ id: 10, role: "Viewer", version: 3 });
    await redis.del(key(10));
    // A newer version written straight to Redis, as if a change had raced ahead of the rebuild's write.
    await redis.hset(key(10), { version: "4", role: "Admin", revokedBelow: "4" });
    expect(await sessions.rebuild(10)).toEqual({
      role: "Admin",
      version: 4,
      revokedBelow: 4,
      deleted: false,
    });
  });

  it("changes applied out of order leave the newest: a late event does not undo a later change", async () => {
    await sessions.apply(change(11, 3, "Viewer"));
    await sessions.apply(change(11, 2, "Blacklist"));
    expect(await row(11)).toEqual({ role: "Viewer", version: 3, revoked_below: 3, deleted: false });
    expect(await redis.hgetall(key(11))).toEqual({ role: "Viewer", version: "3", revokedBelow: "3" });
    // A chain change (no revocation) at a newer version keeps the revocation where it was.
    await sessions.apply(change(11, 4, "Base", false));
    expect(await redis.hgetall(key(11))).toEqual({ role: "Base", version: "4", revokedBelow: "3" });
  });

  it("a sign-in with an account read before a change is STALE, and does not undo the change", async () => {
    await sessions.apply(change(12, 5, "Blacklist"));
    expect(await sessions.signIn({ id: 12, role: "Base", version: 4 })).toBe(STALE);
    expect(await redis.hget(key(12), "role")).toBe("Blacklist");
    expect(await sessions.signIn({ id: 12, role: "Blacklist", version: 5 })).toEqual({
      role: "Blacklist",
      version: 5,
      revokedBelow: 5,
      deleted: false,
    });
  });

  it("a sign-in after Redis lost the hash writes the revocation back with the role", async () => {
    await sessions.apply(change(13, 2, "Viewer"));
    await redis.del(key(13));
    await sessions.signIn({ id: 13, role: "Viewer", version: 2 });
    expect(await redis.hgetall(key(13))).toEqual({ role: "Viewer", version: "2", revokedBelow: "2" });
  });

  it("a deletion stays: no later sign-in or change brings the account back", async () => {
    await sessions.apply(change(14, 2, null));
    expect(await sessions.signIn({ id: 14, role: "Base", version: 9 })).toBe(STALE);
    await sessions.apply(change(14, 9, "Admin"));
    expect((await row(14))?.deleted).toBe(true);
    expect(await redis.hget(key(14), "deleted")).toBe("1");
  });

  it("a sign-in of the account the session already holds only extends its life: no Postgres write", async () => {
    await sessions.apply(change(15, 3, "Viewer"));
    const updatedAt = async () =>
      (await pool.query(`select updated_at from auth.session where user_id = 15`)).rows[0]?.updated_at;
    const before = await updatedAt();
    await redis.expire(key(15), 10);
    expect(await sessions.signIn({ id: 15, role: "Viewer", version: 3 })).toEqual({
      role: "Viewer",
      version: 3,
      revokedBelow: 3,
      deleted: false,
    });
    expect(await updatedAt()).toEqual(before);
    expect(await redis.ttl(key(15))).toBeGreaterThan(7200);
    // Anything else than what the hash holds merges through Postgres, as before.
    await sessions.apply(change(15, 4, null));
    expect(await sessions.signIn({ id: 15, role: "Viewer", version: 4 })).toBe(STALE);
  });
});
