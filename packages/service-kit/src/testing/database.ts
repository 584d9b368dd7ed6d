import { randomBytes } from "node:crypto";
import pg from "pg";

const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

export interface TestDatabase {
  url: string;
  name: string;
  dispose(): Promise<void>;
}

/**
 * A throwaway database for one test file (or one benchmark run), so parallel runs never share state.
 * Its name says what it is, so a leftover from a killed run is easy to spot and drop.
 */
export async function createTestDatabase(label = "test"): Promise<TestDatabase> {
  const name = `t_${label.replace(/[^a-z0-9]/gi, "_").toLowerCase()}_${randomBytes(5).toString("hex")}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async dispose() {
      const client = new pg.Client({ connectionString: ADMIN_URL });
      await client.connect();
      try {
        // Connections that are closing get a moment to go: forcing the drop terminates them, and a client
        // whose pool already let go of it would then throw "terminating connection" into the test run.
        const until = Date.now() + 2_000;
        while (Date.now() < until) {
          const { rows } = await client.query<{ n: number }>(
            "select count(*)::int as n from pg_stat_activity where datname = $1",
            [name],
          );
          if ((rows[0]?.n ?? 0) === 0) break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await client.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}
