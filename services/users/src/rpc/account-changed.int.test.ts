import { UsersEvents, UsersRpc } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import { callerOf, useHarness } from "../test/harness.ts";

// users.user.account-changed: written by a row trigger, so every change of a sign-in field says so,
// whichever code path (or hand-written SQL) made it. The auth service's account copy relies on it.
const h = useHarness("account_changed");

const changesOf = async (userId: number) =>
  (await h.outboxPayloads(UsersEvents.accountChanged)).filter((p) => p.userId === userId);

describe("users.user.account-changed", () => {
  it("is published when a use case changes a sign-in field", async () => {
    const user = await h.seedUser();
    await h.client.call(UsersRpc.update, {
      caller: callerOf(user),
      user: { name: "Grace", surname: null, username: null, mailAddress: null },
    });
    expect(await h.receivedEvent(UsersEvents.accountChanged, { userId: user.id })).toEqual({
      userId: user.id,
      address: user.address,
    });
  });

  it.each([
    ["role", `role = 'Viewer'`],
    ["chain role", `chain_role = 'Whitelist'`],
    ["verification", `is_verified = false`],
    ["username", `username = username || 'x'`],
    ["e-mail", `mail_address = 'x' || mail_address`],
    ["surname", `surname = 'Hopper'`],
  ])("is written with a change of the %s made by SQL alone, in the same transaction", async (_, set) => {
    const user = await h.seedUser();
    const client = await h.sql.connect();
    try {
      await client.query("begin");
      await client.query(`update users."user" set ${set} where id = $1`, [user.id]);
      await client.query("rollback");
      expect(await changesOf(user.id)).toEqual([]);
      await client.query(`update users."user" set ${set} where id = $1`, [user.id]);
    } finally {
      client.release();
    }
    expect(await changesOf(user.id)).toEqual([{ userId: user.id, address: user.address }]);
  });

  it("is not written when nothing a sign-in reads changed", async () => {
    const user = await h.seedUser();
    await h.sql.query(
      `update users."user" set role = role, pending_until = now(), admin_role_at = now(), updated_at = now()
       where id = $1`,
      [user.id],
    );
    expect(await changesOf(user.id)).toEqual([]);
  });

  it("is written when the user is deleted", async () => {
    const user = await h.seedUser();
    await h.sql.query(`delete from users."user" where id = $1`, [user.id]);
    expect(await changesOf(user.id)).toEqual([{ userId: user.id, address: user.address }]);
    await h.receivedEvent(UsersEvents.accountChanged, { userId: user.id });
  });
});
