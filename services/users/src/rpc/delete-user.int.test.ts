import { waitFor } from "@fundraise/bus/testing";
import { UsersEvents, UsersRpc } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import { callerOf, expectAppError, type SeededUser, useHarness } from "../test/harness.ts";

// deleteSelf and delete (admin): the users service's rules, with the projects service's fence and the auth
// service's session played by the harness's STAND-INS (the real three meet in services/projects and e2e).
const h = useHarness("delete");

async function exists(id: number): Promise<boolean> {
  return (await h.sql.query(`select 1 from users."user" where id = $1`, [id])).rows.length === 1;
}

/** Leaves exactly `count` Admins in the table (demoting the others), for the last-admin rule. */
async function onlyAdmins(count: number): Promise<SeededUser[]> {
  await h.sql.query(`update users."user" set role = 'Base' where role = 'Admin'`);
  return Promise.all(Array.from({ length: count }, () => h.seedUser({ role: "Admin" })));
}

describe("users.user.delete-self", () => {
  it("deletes the caller and emits users.user.deleted", async () => {
    const user = await h.seedUser();
    expect(await h.client.call(UsersRpc.deleteSelf, { caller: callerOf(user) })).toBeNull();
    expect(await exists(user.id)).toBe(false);
    expect(await h.receivedEvent(UsersEvents.deleted, { userId: user.id })).toEqual({
      userId: user.id,
      address: user.address,
      version: 2,
    });
  });

  it("fences the user in the projects service before it commits, and the session says deleted before it answers", async () => {
    const user = await h.seedUser();
    await h.client.call(UsersRpc.deleteSelf, { caller: callerOf(user) });
    // Fenced before the commit; its rows there removed before the answer.
    expect(h.projects.calls.filter((c) => c.userId === user.id)).toEqual([
      { op: "fence", userId: user.id },
      { op: "remove", userId: user.id },
    ]);
    expect(h.sessions.state(user.id)).toEqual({ role: null, version: 2, revokedBelow: 2, deleted: true });
  });

  it("409 USER_OWNS_PROJECT when the projects service refuses the fence: nothing is deleted, nothing to lift", async () => {
    const owner = await h.seedUser();
    h.projects.owners.add(owner.id);
    await expectAppError(
      h.client.call(UsersRpc.deleteSelf, { caller: callerOf(owner) }),
      "conflict",
      "USER_OWNS_PROJECT",
    );
    expect(await exists(owner.id)).toBe(true);
    expect((await h.outboxPayloads(UsersEvents.deleted)).some((p) => p.userId === owner.id)).toBe(false);
    expect(h.sessions.state(owner.id)).toBeUndefined();
    h.projects.owners.delete(owner.id);
    await h.client.call(UsersRpc.deleteSelf, { caller: callerOf(owner) });
    expect(await exists(owner.id)).toBe(false);
  });

  it("a deletion whose transaction fails after the fence lifts the fence again", async () => {
    const user = await h.seedUser();
    // The commit fails: a deferred constraint trigger that raises on the user's deletion.
    await h.sql.query(`
      create or replace function users.refuse_delete() returns trigger language plpgsql as $$
      begin raise exception 'refused for the test'; end $$`);
    await h.sql.query(`
      create constraint trigger refuse_delete_${user.id} after delete on users."user"
      deferrable initially deferred for each row when (old.id = ${user.id})
      execute function users.refuse_delete()`);
    try {
      await expect(h.client.call(UsersRpc.deleteSelf, { caller: callerOf(user) })).rejects.toBeTruthy();
    } finally {
      await h.sql.query(`drop trigger refuse_delete_${user.id} on users."user"`);
    }
    expect(await exists(user.id)).toBe(true);
    expect(h.projects.calls.filter((c) => c.userId === user.id)).toEqual([
      { op: "fence", userId: user.id },
      { op: "unfence", userId: user.id },
    ]);
    expect(h.sessions.state(user.id)).toBeUndefined();
  });

  it("503 when the session cannot be told (auth down): the deletion is saved, its event tells the session later", async () => {
    const user = await h.seedUser();
    h.sessions.failing = true;
    try {
      await expectAppError(
        h.client.call(UsersRpc.deleteSelf, { caller: callerOf(user) }),
        "unavailable",
        "SERVICE_UNAVAILABLE",
      );
    } finally {
      h.sessions.failing = false;
    }
    expect(await exists(user.id)).toBe(false);
    expect(await h.receivedEvent(UsersEvents.deleted, { userId: user.id })).toMatchObject({ version: 2 });
  });

  it("409 USER_LAST_ADMIN for the last Admin", async () => {
    const [admin] = await onlyAdmins(1);
    await expectAppError(
      h.client.call(UsersRpc.deleteSelf, { caller: callerOf(admin!) }),
      "conflict",
      "USER_LAST_ADMIN",
    );
    expect(await exists(admin!.id)).toBe(true);
  });

  it("an Admin may leave while another Admin remains", async () => {
    const [first] = await onlyAdmins(2);
    await h.client.call(UsersRpc.deleteSelf, { caller: callerOf(first!) });
    expect(await exists(first!.id)).toBe(false);
  });

  it("two Admins, the only two, deleting each other at once: one succeeds, the other is no Admin any more (403)", async () => {
    const [a, b] = await onlyAdmins(2);
    // Hold both rows, so that both deletions are under way at the same time before either may proceed.
    const blocker = await h.sql.connect();
    await blocker.query("begin");
    await blocker.query(`select id from users."user" where id = any($1) for update`, [[a!.id, b!.id]]);
    const calls = Promise.allSettled([
      h.client.call(UsersRpc.delete, { caller: callerOf(a!), id: b!.id }),
      h.client.call(UsersRpc.delete, { caller: callerOf(b!), id: a!.id }),
    ]);
    await waitFor(
      async () => {
        const { rows } = await h.sql.query<{ n: number }>(
          `select count(*)::int as n from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock'`,
        );
        return rows[0]!.n >= 2;
      },
      10_000,
      "both deletions waiting on the rows",
    );
    await blocker.query("commit");
    blocker.release();
    const results = await calls;
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    // The second finds its caller deleted by the first: judged by the current state, not the gateway's.
    expect(results.find((r) => r.status === "rejected")?.reason).toMatchObject({
      kind: "forbidden",
      code: "ROLE_FORBIDDEN",
    });
    const { rows } = await h.sql.query(`select id from users."user" where role = 'Admin'`);
    expect(rows).toHaveLength(1);
  });

  it("404 for a caller that no longer exists", async () => {
    const user = await h.seedUser();
    await h.sql.query(`delete from users."user" where id = $1`, [user.id]);
    await expectAppError(
      h.client.call(UsersRpc.deleteSelf, { caller: callerOf(user) }),
      "not_found",
      "USER_NOT_FOUND",
    );
  });
});

describe("users.user.delete (admin)", () => {
  it("deletes the user by id and emits users.user.deleted", async () => {
    const admin = await h.seedUser({ role: "Admin" });
    const user = await h.seedUser({ role: "Whitelist" });
    await h.client.call(UsersRpc.delete, { caller: callerOf(admin), id: user.id });
    expect(await exists(user.id)).toBe(false);
    expect(await h.receivedEvent(UsersEvents.deleted, { userId: user.id })).toEqual({
      userId: user.id,
      address: user.address,
      version: 2,
    });
    expect(h.sessions.state(user.id)?.deleted).toBe(true);
  });

  it("404 USER_NOT_FOUND for an id nobody has", async () => {
    const admin = await h.seedUser({ role: "Admin" });
    await expectAppError(
      h.client.call(UsersRpc.delete, { caller: callerOf(admin), id: 987_654 }),
      "not_found",
      "USER_NOT_FOUND",
    );
  });

  it("409 USER_SELF_ACTION when the admin names itself (it must use DELETE /user/delete)", async () => {
    const admin = await h.seedUser({ role: "Admin" });
    const error = await h.client
      .call(UsersRpc.delete, { caller: callerOf(admin), id: admin.id })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "conflict", code: "USER_SELF_ACTION" });
    expect((error as Error).message).toContain("DELETE /user/delete");
    expect(await exists(admin.id)).toBe(true);
  });

  it("409 USER_OWNS_PROJECT for a user who owns a project", async () => {
    const admin = await h.seedUser({ role: "Admin" });
    const owner = await h.seedUser();
    h.projects.owners.add(owner.id);
    await expectAppError(
      h.client.call(UsersRpc.delete, { caller: callerOf(admin), id: owner.id }),
      "conflict",
      "USER_OWNS_PROJECT",
    );
    expect(await exists(owner.id)).toBe(true);
  });

  it("403 ROLE_FORBIDDEN when the caller was demoted after the gateway read its role; nobody is deleted", async () => {
    const [target] = await onlyAdmins(1);
    const demoted = await h.seedUser({ role: "Base" });
    await expectAppError(
      h.client.call(UsersRpc.delete, { caller: callerOf(demoted, "Admin"), id: target!.id }),
      "forbidden",
      "ROLE_FORBIDDEN",
    );
    expect(await exists(target!.id)).toBe(true);
  });

  it("403 ROLE_FORBIDDEN for a caller who is not an Admin", async () => {
    const caller = await h.seedUser({ role: "Viewer" });
    const user = await h.seedUser();
    await expectAppError(
      h.client.call(UsersRpc.delete, { caller: callerOf(caller), id: user.id }),
      "forbidden",
      "ROLE_FORBIDDEN",
    );
    expect(await exists(user.id)).toBe(true);
  });
});
