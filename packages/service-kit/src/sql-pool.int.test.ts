import { ErrorCode } from "@fundraise/protocol";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSqlPool } from "./sql-pool.ts";
import { expectAppError } from "./testing/assertions.ts";
import { createTestDatabase, type TestDatabase } from "./testing/database.ts";

// The plain connections services use for hot single statements, on real Postgres.
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase("kit_sql_pool");
});
afterAll(async () => {
  await db?.dispose();
});

describe("createSqlPool", () => {
  it("answers a statement's rows with their column names, parameters bound", async () => {
    const pool = createSqlPool(db.url);
    try {
      await expect(
        pool.query<{ n: number; word: string }>("SELECT $1::int + 1 AS n, lower($2) AS word", [41, "HeLLo"]),
      ).resolves.toEqual({ rows: [{ n: 42, word: "hello" }] });
    } finally {
      await pool.end();
    }
  });

  it("survives the server dropping a checked-out connection (pg_terminate_backend) and serves the next query", async () => {
    const pool = createSqlPool(db.url);
    const admin = createSqlPool(db.url);
    try {
      const held = (await pool.connect()) as pg.PoolClient;
      const { rows } = await held.query("SELECT pg_backend_pid() AS pid");
      const ended = new Promise((resolve) => held.once("end", resolve));
      // Between two statements, as a transaction that awaits something else: no query to fail, so pg
      // emits 'error' on the client itself, fatal to the process without a listener.
      await admin.query("SELECT pg_terminate_backend($1)", [rows[0]?.pid]);
      await ended;
      held.release(true);
      await expect(pool.query<{ one: number }>("SELECT 1 AS one")).resolves.toEqual({ rows: [{ one: 1 }] });
    } finally {
      await Promise.all([pool.end(), admin.end()]);
    }
  });

  it("answers a database it cannot reach as unavailable (DB_UNAVAILABLE), not as an internal error", async () => {
    const pool = createSqlPool("postgres://postgres@127.0.0.1:1/none");
    try {
      await expectAppError(pool.query("SELECT 1"), "unavailable", ErrorCode.DB_UNAVAILABLE);
    } finally {
      await pool.end();
    }
  });

  it("answers a statement the server does not finish in time as unavailable, not a hang", async () => {
    const pool = createSqlPool(db.url, { queryTimeoutMs: 200 });
    try {
      const started = performance.now();
      // 200 ms against 20 s: half of the statement's own time tells the timeout from a wait for it, however
      // slow the machine.
      await expectAppError(pool.query("SELECT pg_sleep(20)"), "unavailable", ErrorCode.DB_UNAVAILABLE);
      expect(performance.now() - started).toBeLessThan(10_000);
    } finally {
      await pool.end();
    }
  });

  it("keeps a wrong statement the error it is (a bug, not an outage)", async () => {
    const pool = createSqlPool(db.url);
    try {
      await expect(pool.query("SELECT * FROM no_such_table")).rejects.toMatchObject({ code: "42P01" });
    } finally {
      await pool.end();
    }
  });
});
