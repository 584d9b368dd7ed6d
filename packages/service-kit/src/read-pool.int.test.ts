import { ErrorCode } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createReadPool } from "./read-pool.ts";
import { expectAppError } from "./testing/assertions.ts";
import { createTestDatabase, type TestDatabase } from "./testing/database.ts";

// The plain read connections services use for hot single-statement reads, on real Postgres.
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase("kit_reads");
});
afterAll(async () => {
  await db?.dispose();
});

describe("createReadPool", () => {
  it("answers a statement's rows with their column names, parameters bound", async () => {
    const reads = createReadPool(db.url);
    try {
      await expect(
        reads.query<{ n: number; word: string }>("SELECT $1::int + 1 AS n, lower($2) AS word", [41, "HeLLo"]),
      ).resolves.toEqual([{ n: 42, word: "hello" }]);
    } finally {
      await reads.close();
    }
  });

  it("answers a database it cannot reach as unavailable (DB_UNAVAILABLE), not as an internal error", async () => {
    const reads = createReadPool("postgres://postgres@127.0.0.1:1/none");
    try {
      await expectAppError(reads.query("SELECT 1"), "unavailable", ErrorCode.DB_UNAVAILABLE);
    } finally {
      await reads.close();
    }
  });

  it("keeps a wrong statement the error it is (a bug, not an outage)", async () => {
    const reads = createReadPool(db.url);
    try {
      await expect(reads.query("SELECT * FROM no_such_table")).rejects.toMatchObject({ code: "42P01" });
    } finally {
      await reads.close();
    }
  });
});
