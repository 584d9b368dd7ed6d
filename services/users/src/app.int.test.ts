import { type AmqpBus, createAmqpBus } from "@fundraise/bus";
import { createTestVhost, type TestVhost } from "@fundraise/bus/testing";
import { silentLogger } from "@fundraise/service-kit";
import { createTestDatabase, type TestDatabase } from "@fundraise/service-kit/testing";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startUsersApp, type UsersApp } from "./app.ts";
import { loadConfig } from "./config.ts";

// The users service on real Postgres and real RabbitMQ, each run in its own database and vhost.
let db: TestDatabase;
let vhost: TestVhost;
let bus: AmqpBus;
let client: AmqpBus;
let app: UsersApp;

beforeAll(async () => {
  [db, vhost] = await Promise.all([createTestDatabase("users"), createTestVhost("users")]);
  const config = loadConfig({ DATABASE_URL: db.url, AMQP_URL: vhost.url, LOG_LEVEL: "silent" });
  bus = await createAmqpBus({ url: vhost.url, service: "users", logger: silentLogger() });
  client = await createAmqpBus({ url: vhost.url, service: "test-client", logger: silentLogger() });
  app = await startUsersApp({ config, log: silentLogger(), bus });
});

afterAll(async () => {
  await client?.close();
  await bus?.close();
  await app?.stop();
  await Promise.all([db?.dispose(), vhost?.dispose()]);
});

async function insertUser(sql: pg.Client, username: string, isVerified: boolean) {
  const address = `0x${Buffer.from(username.padEnd(20, "x")).toString("hex").slice(0, 40)}`;
  await sql.query(
    `insert into users."user" (name, surname, address, mail_address, username, is_verified, created_at, updated_at)
     values ('N', 'S', $1, $2, $3, $4, now(), now())`,
    [address, `${username}@example.org`, username, isVerified],
  );
}

describe("users.user.count", () => {
  it("applies the committed migrations into the users schema at start-up", async () => {
    const sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
    try {
      const tables = await sql.query(
        "select table_name from information_schema.tables where table_schema = 'users' order by 1",
      );
      expect(tables.rows.map((r) => r.table_name)).toEqual(["mikro_orm_migrations", "user"]);
    } finally {
      await sql.end();
    }
  });

  it("counts verified users only, answered over RabbitMQ", async () => {
    const { UsersRpc } = await import("@fundraise/protocol");
    expect(await client.call(UsersRpc.count, {})).toBe(0);
    const sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
    try {
      await insertUser(sql, "ada", true);
      await insertUser(sql, "bob", false);
      await insertUser(sql, "cyd", true);
    } finally {
      await sql.end();
    }
    expect(await client.call(UsersRpc.count, {})).toBe(2);
  });

  it("refuses a second user with the same username in another case", async () => {
    const sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
    try {
      await expect(insertUser(sql, "ADA", true)).rejects.toThrow(/user_username_unique|user_address_unique/);
    } finally {
      await sql.end();
    }
  });
});
