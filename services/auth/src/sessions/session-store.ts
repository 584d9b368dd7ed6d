import type { RequestContext } from "@fundraise/bus";
import {
  ErrorCode,
  errors,
  parseSessionHash,
  SESSION_FIELD,
  type SessionState,
  sessionKey,
  type UserRole,
} from "@fundraise/protocol";
import { executorOf, type SqlPool } from "@fundraise/service-kit";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Redis } from "ioredis";
import { defineScript, execAll, type Unchanged } from "./redis-exec.ts";

// KEYS[1]: the session hash; ARGV: its life in seconds, then field, value pairs to set. One command
// instead of a MULTI of three or four: it runs on every sign-in. With KEYS[2], the last ARGV is the value
// KEYS[2] must still hold (or nothing is written and it answers 1).
const SET_FIELDS = `
local last = #ARGV
if KEYS[2] then
  if (redis.call('GET', KEYS[2]) or '0') ~= ARGV[last] then return 1 end
  last = last - 1
end
redis.call('HSET', KEYS[1], unpack(ARGV, 2, last))
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 0
`;

/** `setRole`'s answer when the account changed since it was read: nothing was written to Redis. */
export const ACCOUNT_CHANGED = "account-changed";

/**
 * The session state the gateway reads on every authenticated request (packages/protocol `sessions.ts`),
 * kept in Postgres (`auth.session`, the copy that survives) and in Redis (the copy that is read). Every
 * write goes to Postgres first, then to Redis, and extends the hash's life to one token lifetime (+1 min):
 * no token the hash must govern outlives it. A hash Redis lost is rebuilt from Postgres on demand.
 */
export interface SessionStore {
  /**
   * At sign-in and on a role change from the chain: the role only. Answers the revocation time in force
   * (epoch seconds, or null): a token issued now must not be dated before it. With `unchanged` (a sign-in:
   * the account's role was read while that key held that value), the session is left alone when the key
   * changed since, and it answers ACCOUNT_CHANGED: the role read may be older than the session's.
   */
  setRole(
    userId: number,
    role: UserRole,
    em?: EntityManager,
    unchanged?: Unchanged | null,
  ): Promise<number | null | typeof ACCOUNT_CHANGED>;
  /** Refuses every token issued before now (rounded up to the second); drops the role when given null. */
  revoke(userId: number, role: UserRole | null, em?: EntityManager): Promise<void>;
  /**
   * The state from Postgres, written back to Redis without overwriting fields written meanwhile; 503
   * when either cannot be reached (the gateway then refuses the request: fail closed).
   */
  rebuild(userId: number, ctx?: Pick<RequestContext, "log">): Promise<SessionState>;
}

export function createSessionStore(deps: {
  redis: Redis;
  prefix: string;
  tokenTtlSeconds: number;
  em: () => EntityManager;
  /** For the writes that stand alone (a sign-in's): one statement, no unit of work. */
  pool: SqlPool;
}): SessionStore {
  const { redis } = deps;
  const key = (userId: number) => sessionKey(deps.prefix, userId);
  const ttl = deps.tokenTtlSeconds + 60;
  const setFields = defineScript(redis, SET_FIELDS);
  /** One statement with `$n` parameters: on the caller's transaction when given one, else on the pool. */
  const run = async <R extends Record<string, unknown>>(
    sql: string,
    params: unknown[],
    em?: EntityManager,
  ) => (em ? ((await executorOf(em).query(sql, params)).rows as R[]) : deps.pool.query<R>(sql, params));

  return {
    async setRole(userId, role, em, unchanged) {
      const [row] = await run<{ revoked_before: string | number | null }>(
        `insert into auth.session (user_id, role) values ($1, $2)
         on conflict (user_id) do update set role = excluded.role, updated_at = now()
         returning revoked_before`,
        [userId, role],
        em,
      );
      const revokedBefore = row?.revoked_before == null ? null : Number(row.revoked_before);
      // Both fields from Postgres: a hash Redis lost must not come back without its revocation.
      const fields: string[] = [SESSION_FIELD.role, role];
      if (revokedBefore !== null) fields.push(SESSION_FIELD.revokedBefore, String(revokedBefore));
      if (unchanged) {
        const changed = await setFields([key(userId), unchanged.key], [ttl, ...fields, unchanged.value]);
        if (Number(changed) === 1) return ACCOUNT_CHANGED;
      } else {
        await setFields([key(userId)], [ttl, ...fields]);
      }
      return revokedBefore;
    },

    async revoke(userId, role, em = deps.em()) {
      // Rounded up: a token issued earlier in this second (iat = floor) is refused too.
      const [row] = await em.execute<{ revoked_before: string | number }[]>(
        `insert into auth.session (user_id, role, revoked_before) values (?, ?, ?)
         on conflict (user_id) do update set role = excluded.role, updated_at = now(),
           revoked_before = greatest(auth.session.revoked_before, excluded.revoked_before)
         returning revoked_before`,
        [userId, role, Math.ceil(Date.now() / 1000)],
      );
      const k = key(userId);
      const tx = redis.multi().hset(k, SESSION_FIELD.revokedBefore, String(row?.revoked_before));
      if (role === null) tx.hdel(k, SESSION_FIELD.role);
      else tx.hset(k, SESSION_FIELD.role, role);
      await execAll(tx.expire(k, ttl));
    },

    async rebuild(userId, ctx) {
      try {
        const state = await rebuildFromPostgres(userId);
        ctx?.log.info({ userId }, "session state rebuilt from Postgres");
        return state;
      } catch (cause) {
        throw errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, "Sessions cannot be checked right now.", {
          cause,
        });
      }
    },
  };

  async function rebuildFromPostgres(userId: number): Promise<SessionState> {
    const rows = await deps
      .em()
      .execute<{ role: string | null; revoked_before: string | number | null }[]>(
        `select role, revoked_before from auth.session where user_id = ?`,
        [userId],
      );
    const row = rows[0];
    const fields: Record<string, string> = {};
    if (row?.role) fields[SESSION_FIELD.role] = row.role;
    if (row?.revoked_before != null) fields[SESSION_FIELD.revokedBefore] = String(row.revoked_before);
    const state = parseSessionHash(fields) ?? { role: null, revokedBefore: null };
    // HSETNX: a write that reached Redis between our read and now is newer than what we read.
    const k = key(userId);
    const tx = redis.multi();
    for (const [field, value] of Object.entries(fields)) tx.hsetnx(k, field, value);
    tx.hsetnx(k, SESSION_FIELD.rebuiltAt, String(Math.floor(Date.now() / 1000)));
    await execAll(tx.expire(k, ttl));
    return parseSessionHash(await redis.hgetall(k)) ?? state;
  }
}
