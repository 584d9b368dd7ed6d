import { defineEntity, p } from "@mikro-orm/core";
import { Migration } from "@mikro-orm/migrations";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "./logger.ts";
import { createOrm, type Orm } from "./orm.ts";
import { createTestDatabase, type TestDatabase } from "./testing/database.ts";

const Thing = defineEntity({
  name: "Thing",
  properties: { id: p.integer().primary().autoincrement(), label: p.string() },
});

class Migration1_things extends Migration {
  override async up(): Promise<void> {
    // Slow on purpose: a second instance starting meanwhile must wait, not apply it again.
    this.addSql("select pg_sleep(0.3)");
    this.addSql(`create table "thing" ("id" serial primary key, "label" text not null)`);
  }
}

let db: TestDatabase;
const orms: Orm[] = [];
beforeAll(async () => {
  db = await createTestDatabase("orm");
});
afterAll(async () => {
  await Promise.all(orms.map((o) => o.close()));
  await db.dispose();
});

describe("createOrm", () => {
  it("migrates a fresh schema exactly once when instances start together", async () => {
    const setup = {
      url: db.url,
      schema: "kit",
      entities: [Thing],
      migrations: [{ name: "Migration1_things", class: Migration1_things }],
      log: silentLogger(),
    };
    orms.push(...(await Promise.all([createOrm(setup), createOrm(setup), createOrm(setup)])));
    const em = orms[0]!.em.fork();
    em.create(Thing, { label: "x" });
    await em.flush();
    expect(await orms[1]!.em.fork().count(Thing)).toBe(1);
    const rows = await orms[0]!.em.getConnection().execute(`select name from kit.mikro_orm_migrations`);
    expect(rows.map((r) => (r as { name: string }).name)).toEqual(["Migration1_things"]);
  });
});
