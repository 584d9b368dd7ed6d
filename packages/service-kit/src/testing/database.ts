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
        await client.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}
