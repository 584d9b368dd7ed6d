import { waitFor } from "@fundraise/bus/testing";
import { UsersEvents, UsersRpc } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import { callerOf, expectAppError, uniqueName, useHarness } from "./test/harness.ts";

// The users service on real Postgres and real RabbitMQ, each run in its own database and vhost.
const h = useHarness("app");

describe("start-up", () => {
  it("applies the committed migrations into the users schema", async () => {
    const tables = await h.sql.query(
      "select table_name from information_schema.tables where table_schema = 'users' order by 1",
    );
    expect(tables.rows.map((r) => r.table_name)).toEqual([
      "address_sanction",
      "mikro_orm_migrations",
      "outbox",
      "processed_message",
      "role_change",
      "rpc_answer",
      "user",
    ]);
  });
});

describe("users.user.count", () => {
  it("counts verified users only, answered over RabbitMQ", async () => {
    expect(await h.client.call(UsersRpc.count, {})).toBe(0);
    await h.seedUser({ username: "ada" });
    await h.seedUser({ username: "bob", isVerified: false });
    await h.seedUser({ username: "cyd" });
    expect(await h.client.call(UsersRpc.count, {})).toBe(2);
  });

  it("the table refuses a second user with the same username in another case", async () => {
    await expect(h.seedUser({ username: "ADA" })).rejects.toThrow(/user_username_unique/);
  });
});

describe("outbox: an event is sent exactly when its change commits", () => {
  it("a change whose transaction rolls back at commit emits nothing; the next committed one does", async () => {
    // Sabotage at COMMIT, after the service wrote both the user row and the outbox row: a deferred
    // constraint trigger fails the commit of any update that sets the name to 'Sabotage'.
    await h.sql.query(`
      create or replace function users.fail_at_commit() returns trigger language plpgsql as
        $$ begin raise exception 'sabotaged commit'; end $$;
      create constraint trigger fail_at_commit after update on users."user"
        deferrable initially deferred for each row when (new.name = 'Sabotage')
        execute function users.fail_at_commit();`);
    const user = await h.seedUser();
    const lost = `${uniqueName("lost")}@example.org`;
    await expectAppError(
      h.client.call(UsersRpc.update, {
        caller: callerOf(user),
        user: { name: "Sabotage", surname: null, username: null, mailAddress: lost },
      }),
      "internal",
      "INTERNAL",
    );
    const { rows } = await h.sql.query(
      `select name, mail_address, is_verified from users."user" where id = $1`,
      [user.id],
    );
    expect(rows[0]).toEqual({ name: "Ada", mail_address: user.mailAddress, is_verified: true });
    expect((await h.outboxPayloads(UsersEvents.emailChanged)).filter((p) => p.userId === user.id)).toEqual(
      [],
    );

    const kept = `${uniqueName("kept")}@example.org`;
    await h.client.call(UsersRpc.update, {
      caller: callerOf(user),
      user: { name: null, surname: null, username: null, mailAddress: kept },
    });
    await h.receivedEvent(UsersEvents.emailChanged, { userId: user.id });
    // The relay publishes in commit order, so a leaked first event would have arrived before this one.
    expect(
      h.events.filter((e) => e.name === UsersEvents.emailChanged.name && e.payload.userId === user.id),
    ).toEqual([
      {
        name: UsersEvents.emailChanged.name,
        payload: { userId: user.id, address: user.address, mailAddress: kept },
      },
    ]);
    // ...and marks what it published, so nothing is sent twice on the next pass.
    await waitFor(
      async () =>
        (await h.sql.query(`select 1 from users.outbox where published_at is null`)).rows.length === 0,
      10_000,
      "every outbox row marked published",
    );
  });
});
