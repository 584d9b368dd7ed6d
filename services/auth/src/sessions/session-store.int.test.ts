import { randomBytes } from "node:crypto";
import { sessionKey } from "@fundraise/protocol";
import { createOrm, createSqlPool, type Orm, type SqlPool, silentLogger } from "@fundraise/service-kit";
import { createTestDatabase, type TestDatabase } from "@fundraise/service-kit/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations } from "../db/migrations/index.ts";
import { SigningKey } from "../keys/signing-key.entity.ts";
import { EmailVerification } from "../sign-up/email-verification.entity.ts";
import { createSessionStore, type SessionStore } from "./session-store.ts";

// Revocation survives Redis (behaviour.md §7): Postgres keeps the session state, Redis is rebuilt from it.
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
    schema: "auth",
    entities: [SigningKey, EmailVerification],
    migrations,
    log: silentLogger(),
  });
  redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
  pool = createSqlPool(db.url);
  sessions = createSessionStore({ redis, prefix, tokenTtlSeconds: 7200, em: () => orm.em.fork(), pool });
});

afterAll(async () => {
  const keys = await redis?.keys(`${prefix}*`);
  if (keys?.length) await redis.del(...keys);
  await redis?.quit();
  await pool?.close();
  await orm?.close();
  await db?.dispose();
});

describe("session store: Postgres behind the Redis hash", () => {
  it("a revocation lost by Redis is rebuilt from Postgres, with the role", async () => {
    await sessions.setRole(7, "Whitelist");
    await sessions.revoke(7, "Blacklist");
    const before = await redis.hgetall(key(7));
    await redis.del(key(7));

    const rebuilt = await sessions.rebuild(7);
    expect(rebuilt).toEqual({ role: "Blacklist", revokedBefore: Number(before.revokedBefore) });
    expect(await redis.hget(key(7), "revokedBefore")).toBe(before.revokedBefore);
    expect(await redis.hget(key(7), "role")).toBe("Blacklist");
    expect(await redis.ttl(key(7))).toBeGreaterThan(7200);
  });

  it("a deleted user's state (no role, revoked) comes back as such", async () => {
    await sessions.setRole(8, "Base");
    await sessions.revoke(8, null);
    await redis.del(key(8));
    const rebuilt = await sessions.rebuild(8);
    expect(rebuilt.role).toBeNull();
    expect(rebuilt.revokedBefore).toBeGreaterThan(0);
    expect(await redis.hexists(key(8), "role")).toBe(0);
  });

  it("a user with no stored state gets an existing, empty hash (no rebuild on every request)", async () => {
    expect(await sessions.rebuild(9)).toEqual({ role: null, revokedBefore: null });
    expect(await redis.exists(key(9))).toBe(1);
  });

  it("a write that reaches Redis during a rebuild is not overwritten by the older copy", async () => {
    await sessions.setRole(10, "Viewer");
    await redis.del(key(10));
    // A newer role written straight to Redis, as if setRole had raced ahead of the rebuild's write.
    await redis.hset(key(10), "role", "Admin");
    expect((await sessions.rebuild(10)).role).toBe("Admin");
  });

  it("a sign-in after Redis lost the hash writes the revocation back with the role", async () => {
    await sessions.revoke(12, "Viewer");
    const revokedBefore = await redis.hget(key(12), "revokedBefore");
    await redis.del(key(12));
    expect(await sessions.setRole(12, "Viewer")).toBe(Number(revokedBefore));
    expect(await redis.hgetall(key(12))).toEqual({ role: "Viewer", revokedBefore });
  });

  it("a revocation time never moves back", async () => {
    await sessions.revoke(11, "Base");
    const first = await orm.em.fork().execute(`select revoked_before from auth.session where user_id = 11`);
    await orm.em
      .fork()
      .execute(`update auth.session set revoked_before = revoked_before + 1000 where user_id = 11`);
    await sessions.revoke(11, "Base");
    const after = await orm.em.fork().execute(`select revoked_before from auth.session where user_id = 11`);
    expect(Number(after[0]!.revoked_before)).toBe(Number(first[0]!.revoked_before) + 1000);
  });
});
