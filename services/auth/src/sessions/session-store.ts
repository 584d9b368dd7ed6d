import type { RequestContext } from "@fundraise/bus";
import type { SqlPool } from "@fundraise/outbox";
import {
  ErrorCode,
  errors,
  parseSessionHash,
  SESSION_FIELD,
  type SessionChange,
  type SessionState,
  sessionKey,
  type UserRole,
} from "@fundraise/protocol";
import type { Redis } from "ioredis";
import { AUTH_SCHEMA } from "../db/schema.ts";
import { defineScript } from "./redis-exec.ts";

// KEYS[1]: the session hash; ARGV: its life in seconds, version, role ('' for none), revokedBelow, deleted
// ('1' or '0'). The Redis copy of a row Postgres merged: the role is taken from a version at least as new as
// the one held, the revocation only rises, and a deletion stays. Writers that reach Redis out of order
// (two changes, a change and a sign-in, a rebuild) therefore leave the newest state, whatever the order.
const MIRROR = `
local held = tonumber(redis.call('HGET', KEYS[1], '${SESSION_FIELD.version}') or '-1')
if tonumber(ARGV[2]) >= held then
  redis.call('HSET', KEYS[1], '${SESSION_FIELD.version}', ARGV[2])
  if ARGV[3] == '' then redis.call('HDEL', KEYS[1], '${SESSION_FIELD.role}')
  else redis.call('HSET', KEYS[1], '${SESSION_FIELD.role}', ARGV[3]) end
end
local below = tonumber(redis.call('HGET', KEYS[1], '${SESSION_FIELD.revokedBelow}') or '-1')
if tonumber(ARGV[4]) > below then redis.call('HSET', KEYS[1], '${SESSION_FIELD.revokedBelow}', ARGV[4]) end
if ARGV[5] == '1' then redis.call('HSET', KEYS[1], '${SESSION_FIELD.deleted}', '1') end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 0
`;

// A sign-in whose account the session already holds (same version and role, not deleted) only extends the
// hash's life: the common sign-in costs one Redis command, no Postgres write (every hash came from a merged
// Postgres row, so the row is there). KEYS[1]: the hash; ARGV: life in seconds, version, role. Answers
// revokedBelow, or nil when the hash says anything else (the full merge runs).
const HELD = `
local f = redis.call('HMGET', KEYS[1], '${SESSION_FIELD.version}', '${SESSION_FIELD.role}', '${SESSION_FIELD.deleted}', '${SESSION_FIELD.revokedBelow}')
if f[1] ~= ARGV[2] or f[2] ~= ARGV[3] or f[3] == '1' then return nil end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return f[4] or '0'
`;

/** `signIn`'s answer when the session holds a newer account version than the one read: read it again. */
export const STALE = "stale";

/** What an account change makes of its user's session: deletion clears the role; a revocation rises to it. */
export const sessionOfChange = (change: SessionChange): SessionState => ({
  role: change.deleted ? null : change.role,
  version: change.version,
  revokedBelow: change.revoke ? change.version : 0,
  deleted: change.deleted,
});

/**
 * The session state the gateway reads on every authenticated request (packages/protocol `sessions.ts`),
 * kept in Postgres (`auth.session`, the copy that survives) and in Redis (the copy that is read). Every
 * write merges into Postgres first (one statement: newer versions only, revocation only rises, deletion
 * stays) and mirrors the merged row to Redis, extending the hash's life to one token lifetime (+1 min): no
 * token the hash must govern outlives it. A hash Redis lost is rebuilt from Postgres on demand.
 */
export interface SessionStore {
  /** A change the users service made (its call before answering, or its event later): idempotent. */
  apply(change: SessionChange): Promise<SessionState>;
  /**
   * At sign-in, the account as read: the session takes its role unless it holds a newer version. Answers
   * the state in force, or STALE when the account read is older than the session (a change landed since
   * the read, or the account is deleted): the token would speak for a past account.
   */
  signIn(account: { id: number; role: UserRole; version: number }): Promise<SessionState | typeof STALE>;
  /**
   * The state from Postgres, written back to Redis (without undoing anything written meanwhile); 503
   * when either cannot be reached (the gateway then refuses the request: fail closed).
   */
  rebuild(userId: number, ctx?: Pick<RequestContext, "log">): Promise<SessionState>;
}

type SessionRow = {
  role: string | null;
  version: string | number;
  revoked_below: string | number;
  deleted: boolean;
};

const MERGE = `
  insert into ${AUTH_SCHEMA}.session as s (user_id, role, version, revoked_below, deleted)
  values ($1, $2, $3, $4, $5)
  on conflict (user_id) do update set
    role = case when excluded.version > s.version then excluded.role else s.role end,
    version = greatest(s.version, excluded.version),
    revoked_below = greatest(s.revoked_below, excluded.revoked_below),
    deleted = s.deleted or excluded.deleted,
    updated_at = now()
  returning role, version, revoked_below, deleted`;

const stateOf = (row: SessionRow | undefined): SessionState => ({
  role: (row?.role ?? null) as UserRole | null,
  version: Number(row?.version ?? 0),
  revokedBelow: Number(row?.revoked_below ?? 0),
  deleted: row?.deleted ?? false,
});

export function createSessionStore(deps: {
  redis: Redis;
  prefix: string;
  tokenTtlSeconds: number;
  pool: SqlPool;
}): SessionStore {
  const ttl = deps.tokenTtlSeconds + 60;
  const mirrorScript = defineScript(deps.redis, MIRROR);
  const heldScript = defineScript(deps.redis, HELD);
  const mirror = async (userId: number, state: SessionState) => {
    await mirrorScript(
      [sessionKey(deps.prefix, userId)],
      [ttl, state.version, state.role ?? "", state.revokedBelow, state.deleted ? "1" : "0"],
    );
    return state;
  };
  const merge = async (
    userId: number,
    row: { role: UserRole | null; version: number; revokedBelow: number; deleted: boolean },
  ) => {
    const {
      rows: [merged],
    } = await deps.pool.query<SessionRow>(MERGE, [
      userId,
      row.role,
      row.version,
      row.revokedBelow,
      row.deleted,
    ]);
    return mirror(userId, stateOf(merged));
  };

  return {
    apply: (change) => merge(change.userId, sessionOfChange(change)),

    async signIn(account) {
      const held = await heldScript(
        [sessionKey(deps.prefix, account.id)],
        [ttl, account.version, account.role],
      );
      if (held !== null) {
        return { role: account.role, version: account.version, revokedBelow: Number(held), deleted: false };
      }
      const state = await merge(account.id, {
        role: account.role,
        version: account.version,
        revokedBelow: 0,
        deleted: false,
      });
      return state.deleted || state.version > account.version ? STALE : state;
    },

    async rebuild(userId, ctx) {
      try {
        const {
          rows: [row],
        } = await deps.pool.query<SessionRow>(
          `select role, version, revoked_below, deleted from ${AUTH_SCHEMA}.session where user_id = $1`,
          [userId],
        );
        const state = await mirror(userId, stateOf(row));
        ctx?.log.info({ userId }, "session state rebuilt from Postgres");
        // A change mirrored between the read and now is newer than what was read: answer the hash.
        return parseSessionHash(await deps.redis.hgetall(sessionKey(deps.prefix, userId))) ?? state;
      } catch (cause) {
        throw errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, "Sessions cannot be checked right now.", {
          cause,
        });
      }
    },
  };
}
