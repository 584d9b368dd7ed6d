import { processedMessageDdl } from "@fundraise/outbox";
import { defineEntity, p } from "@mikro-orm/core";
import { Migration } from "@mikro-orm/migrations";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isUniqueViolation } from "./db-errors.ts";
import { handleOnce } from "./handle-once.ts";
import { silentLogger } from "./logger.ts";
import { createOrm, type Orm } from "./orm.ts";
import { executorOf, inTransaction } from "./sql.ts";
import { expectAppError } from "./testing/assertions.ts";
import { createTestDatabase, type TestDatabase } from "./testing/database.ts";

// The SQL executor, the transaction helper and handleOnce that every service shares, on real Postgres.
const Note = defineEntity({
  name: "Note",
  properties: { id: p.integer().primary().autoincrement(), text: p.string() },
});

class Migration1_notes extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "note" ("id" serial primary key, "text" text not null unique)`);
    this.addSql(processedMessageDdl("kit"));
  }
}

let db: TestDatabase;
let orm: Orm;
const log = silentLogger();
beforeAll(async () => {
  db = await createTestDatabase("kit_sql");
  orm = await createOrm({
    url: db.url,
    schema: "kit",
    entities: [Note],
    migrations: [{ name: "Migration1_notes", class: Migration1_notes }],
    log,
  });
});
afterAll(async () => {
  await orm?.close();
  await db?.dispose();
});

const count = async () => orm.em.fork().count(Note, {});

describe("executorOf and inTransaction", () => {
  it("a deadlock is a 503 to repeat (the database chose this write to give way), never a 500", async () => {
    const em = orm.em.fork();
    await em.execute(`insert into kit.note (text) values ('dl-a'), ('dl-b')`);
    let bothHoldOne: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => {
      let held = 0;
      bothHoldOne = () => {
        held += 1;
        if (held === 2) resolve();
      };
    });
    // Each locks one row, waits until the other holds its own, then wants the other's: a cycle.
    const crossing = (first: string, second: string) =>
      inTransaction(orm.em.fork(), async ({ sql }) => {
        await sql.query(`update kit.note set text = text where text = $1`, [first]);
        bothHoldOne();
        await ready;
        await sql.query(`update kit.note set text = text where text = $1`, [second]);
      });
    const results = await Promise.allSettled([crossing("dl-a", "dl-b"), crossing("dl-b", "dl-a")]);
    const failed = results.filter((r) => r.status === "rejected");
    expect(failed).toHaveLength(1);
    await expectAppError(
      Promise.reject((failed[0] as PromiseRejectedResult).reason),
      "unavailable",
      "DB_UNAVAILABLE",
    );
  });

  it("runs SQL in the entity manager's transaction: a rollback takes both the entity and the raw row", async () => {
    const before = await count();
    await expect(
      inTransaction(orm.em.fork(), async ({ em, sql }) => {
        em.create(Note, { text: "via the unit of work" });
        await em.flush();
        await sql.query(`insert into kit.note (text) values ($1)`, ["via SQL"]);
        throw new Error("abort");
      }),
    ).rejects.toThrow("abort");
    expect(await count()).toBe(before);
  });

  it("refuses placeholders out of order, which `?` substitution would bind wrongly", async () => {
    const sql = executorOf(orm.em.fork());
    await expect(sql.query("select $2::int, $1::int", [1, 2])).rejects.toThrow(/in order/);
    expect((await sql.query("select $1::int as a, $2::int as b", [1, 2])).rows).toEqual([{ a: 1, b: 2 }]);
  });

  it("turns a unique violation into the conflict named for its constraint", async () => {
    await inTransaction(orm.em.fork(), async ({ em }) => void em.create(Note, { text: "taken" }));
    const error = await inTransaction(
      orm.em.fork(),
      async ({ em }) => void em.create(Note, { text: "taken" }),
      () => ({ code: "NOTE_TAKEN", message: "That note exists." }),
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "conflict", code: "NOTE_TAKEN", message: "That note exists." });
  });

  it("isUniqueViolation tells a unique violation by its constraint, also through the conflict it became", async () => {
    await inTransaction(orm.em.fork(), async ({ em }) => void em.create(Note, { text: "twice" }));
    const insertAgain = (conflict?: () => { code: string; message: string }) =>
      inTransaction(orm.em.fork(), async ({ em }) => void em.create(Note, { text: "twice" }), conflict).catch(
        (e: unknown) => e,
      );
    const raw = await insertAgain();
    const translated = await insertAgain(() => ({ code: "NOTE_TAKEN", message: "That note exists." }));
    for (const error of [raw, translated]) {
      expect(isUniqueViolation(error)).toBe(true);
      expect(isUniqueViolation(error, "note_text_key")).toBe(true);
      expect(isUniqueViolation(error, "another_index")).toBe(false);
    }
    expect(isUniqueViolation(new Error("no", { cause: new Error("nor this") }))).toBe(false);
    expect(isUniqueViolation(undefined)).toBe(false);
  });
});

describe("handleOnce", () => {
  const ctx = (messageId: string) => ({ messageId, log });
  const claim = { schema: "kit", consumer: "kit.test" };

  it("runs a message's work once; the duplicate does nothing", async () => {
    let runs = 0;
    const work = async () => {
      runs += 1;
    };
    expect(await handleOnce(orm.em.fork(), claim, ctx("m-1"), work)).toBe(true);
    expect(await handleOnce(orm.em.fork(), claim, ctx("m-1"), work)).toBe(false);
    expect(runs).toBe(1);
  });

  it("a failure rolls back the claim with the work, so the retry runs it", async () => {
    const before = await count();
    const failing = handleOnce(orm.em.fork(), claim, ctx("m-2"), async (em) => {
      em.create(Note, { text: "half done" });
      await em.flush();
      throw new Error("crash");
    });
    await expect(failing).rejects.toThrow("crash");
    expect(await count()).toBe(before);
    const retried = await handleOnce(orm.em.fork(), claim, ctx("m-2"), async (em) => {
      em.create(Note, { text: "done" });
    });
    expect(retried).toBe(true);
    expect(await count()).toBe(before + 1);
  });

  it("a business key makes the same fact under another message id a duplicate", async () => {
    const keyed = { ...claim, key: "31337:0xabc:0" };
    expect(await handleOnce(orm.em.fork(), keyed, ctx("m-3"), async () => undefined)).toBe(true);
    expect(await handleOnce(orm.em.fork(), keyed, ctx("m-4"), async () => undefined)).toBe(false);
  });
});

describe("a connection the server terminates inside a transaction", () => {
  it("is 503 DB_UNAVAILABLE, and its pool slot comes back (more failures than the pool has connections)", async () => {
    const small = await createOrm({
      url: db.url,
      schema: "kit",
      entities: [Note],
      migrations: [{ name: "Migration1_notes", class: Migration1_notes }],
      log,
      poolMax: 2,
    });
    try {
      for (let i = 0; i < 5; i++) {
        await expectAppError(
          inTransaction(small.em.fork(), async ({ sql }) => {
            await sql.query("select pg_terminate_backend(pg_backend_pid())");
          }),
          "unavailable",
          "DB_UNAVAILABLE",
        );
      }
      // Without the slots back, this would wait forever for a connection.
      expect(await small.em.fork().count(Note, {})).toBeGreaterThanOrEqual(0);
    } finally {
      await small.close();
    }
  }, 30_000);
});
