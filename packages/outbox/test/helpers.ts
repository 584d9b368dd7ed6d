import { randomBytes } from "node:crypto";
import { defineEvent } from "@fundraise/protocol";
import pg from "pg";
import pino, { type Logger } from "pino";
import Type from "typebox";

/** Silent unless LOG_LEVEL is set (e.g. LOG_LEVEL=debug pnpm --filter @fundraise/outbox test). */
export function testLogger(): Logger {
  return pino({ level: process.env.LOG_LEVEL ?? "silent" });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const ADMIN_URL = process.env.PG_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

export interface TestDatabase {
  name: string;
  url: string;
  pool: pg.Pool;
  dispose(): Promise<void>;
}

/** A throwaway Postgres database for one test file, dropped by dispose(). */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `outbox_test_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 8 });
  return {
    name,
    url: url.toString(),
    pool,
    async dispose() {
      await pool.end();
      const cleanup = new pg.Client({ connectionString: ADMIN_URL });
      await cleanup.connect();
      try {
        // The pool's sockets close after `end` resolves: a forced drop before the server saw them go
        // terminates them, and a client that is ending reports that as an unhandled error.
        for (let waited = 0; waited < 2_000; waited += 20) {
          const { rows } = await cleanup.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1",
            [name],
          );
          if (rows[0]?.n === 0) break;
          await sleep(20);
        }
        await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await cleanup.end();
      }
    },
  };
}

/** Runs `work` in a transaction on a connection of its own: committed when it resolves. */
export async function transaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK");
    throw error;
  } finally {
    client.release();
  }
}

export const TestEvents = {
  happened: defineEvent("users.test.happened", Type.Object({ n: Type.Integer() })),
  stored: defineEvent(
    "storage.test.stored",
    Type.Object({ name: Type.String(), cid: Type.String(), sizes: Type.Array(Type.Integer()) }),
  ),
} as const;
