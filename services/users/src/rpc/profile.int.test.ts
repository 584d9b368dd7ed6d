import type { MessageContext } from "@fundraise/bus";
import { UsersEvents, UsersRpc } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerOf, expectAppError, uniqueName, useHarness } from "../test/harness.ts";

// get, update and list, called over RabbitMQ as the gateway calls them.
const h = useHarness("profile");

const noChange = { name: null, surname: null, username: null, mailAddress: null };

async function row(id: number) {
  const { rows } = await h.sql.query(`select * from users."user" where id = $1`, [id]);
  return rows[0] as Record<string, unknown> | undefined;
}

describe("users.user.get", () => {
  it("answers the caller's UserDTO with invitations null while the projects service cannot answer", async () => {
    const user = await h.seedUser({ role: "Viewer" });
    expect(await h.client.call(UsersRpc.get, { caller: callerOf(user) })).toEqual({
      id: user.id,
      name: "Ada",
      surname: "Lovelace",
      address: user.address,
      mailAddress: user.mailAddress,
      username: user.username,
      role: "Viewer",
      invitations: null,
    });
  });

  it("404 USER_NOT_FOUND for a caller that no longer exists", async () => {
    const user = await h.seedUser();
    await h.sql.query(`delete from users."user" where id = $1`, [user.id]);
    await expectAppError(
      h.client.call(UsersRpc.get, { caller: callerOf(user) }),
      "not_found",
      "USER_NOT_FOUND",
    );
  });

  describe("with a projects service on the bus", () => {
    let behaviour: "answer" | "hang" = "answer";
    let release: () => void = () => undefined;
    const seen: Pick<MessageContext, "requestId" | "deadline">[] = [];

    beforeAll(() => {
      h.projects.invitations = async (userId, ctx) => {
        seen.push({ requestId: ctx.requestId, deadline: ctx.deadline });
        if (behaviour === "hang") await new Promise<void>((resolve) => (release = resolve));
        return [{ id: 7, projectID: 3, userID: userId, role: "Editor" as const, isAccepted: false }];
      };
    });
    afterAll(() => {
      release();
      h.projects.invitations = undefined;
    });

    it("adds the caller's pending invitations, passing the request id and a short deadline on", async () => {
      const user = await h.seedUser();
      const before = Date.now();
      const dto = await h.client.call(
        UsersRpc.get,
        { caller: callerOf(user) },
        { requestId: "req-get-invitations", timeoutMs: 60_000 },
      );
      expect(dto.invitations).toEqual([
        { id: 7, projectID: 3, userID: user.id, role: "Editor", isAccepted: false },
      ]);
      const call = seen.at(-1);
      expect(call?.requestId).toBe("req-get-invitations");
      // Bounded by the service's own short timeout, not by the gateway's minute.
      expect(call?.deadline).toBeLessThan(before + 30_000);
    });

    it("answers invitations null when the projects service does not answer in time", async () => {
      behaviour = "hang";
      const user = await h.seedUser();
      const dto = await h.client.call(UsersRpc.get, { caller: callerOf(user) });
      expect(dto).toMatchObject({ id: user.id, invitations: null });
      release();
      behaviour = "answer";
    });
  });
});

describe("users.user.update", () => {
  it("403 ROLE_FORBIDDEN for a Blacklist caller (read-only), and nothing changes", async () => {
    const user = await h.seedUser({ role: "Blacklist" });
    await expectAppError(
      h.client.call(UsersRpc.update, {
        caller: callerOf(user),
        user: { ...noChange, name: "Mallory" },
      }),
      "forbidden",
      "ROLE_FORBIDDEN",
    );
    expect((await row(user.id))?.name).toBe("Ada");
  });

  it("updates name and surname (trimmed) and keeps the rest; no e-mail event", async () => {
    const user = await h.seedUser();
    const dto = await h.client.call(UsersRpc.update, {
      caller: callerOf(user),
      user: { ...noChange, name: "  Grace ", surname: "Hopper" },
    });
    expect(dto).toMatchObject({
      id: user.id,
      name: "Grace",
      surname: "Hopper",
      username: user.username,
      mailAddress: user.mailAddress,
      invitations: null,
    });
    expect((await row(user.id))?.is_verified).toBe(true);
    const mails = await h.outboxPayloads(UsersEvents.emailChanged);
    expect(mails.filter((p) => p.userId === user.id)).toEqual([]);
  });

  it("absent or null fields leave the user unchanged", async () => {
    const user = await h.seedUser();
    const dto = await h.client.call(UsersRpc.update, { caller: callerOf(user), user: {} });
    expect(dto).toMatchObject({ name: "Ada", surname: "Lovelace", username: user.username });
  });

  it("a changed e-mail unverifies the user and emits users.user.email-changed", async () => {
    const user = await h.seedUser();
    const mailAddress = `${uniqueName("new")}@example.org`;
    const dto = await h.client.call(UsersRpc.update, {
      caller: callerOf(user),
      user: { ...noChange, mailAddress: ` ${mailAddress} ` },
    });
    expect(dto.mailAddress).toBe(mailAddress);
    expect(await row(user.id)).toMatchObject({ is_verified: false, pending_until: null });
    expect(await h.receivedEvent(UsersEvents.emailChanged, { userId: user.id })).toEqual({
      userId: user.id,
      address: user.address,
      mailAddress,
    });
  });

  it("the same e-mail in another letter case is no change: still verified, no event", async () => {
    const user = await h.seedUser();
    const dto = await h.client.call(UsersRpc.update, {
      caller: callerOf(user),
      user: { ...noChange, mailAddress: user.mailAddress.toUpperCase() },
    });
    expect(dto.mailAddress).toBe(user.mailAddress.toUpperCase());
    expect((await row(user.id))?.is_verified).toBe(true);
    const mails = await h.outboxPayloads(UsersEvents.emailChanged);
    expect(mails.filter((p) => p.userId === user.id)).toEqual([]);
  });

  it("409 naming which: username or e-mail of another user, in any case", async () => {
    const other = await h.seedUser();
    const user = await h.seedUser();
    await expectAppError(
      h.client.call(UsersRpc.update, {
        caller: callerOf(user),
        user: { ...noChange, username: other.username.toUpperCase() },
      }),
      "conflict",
      "USER_USERNAME_TAKEN",
    );
    await expectAppError(
      h.client.call(UsersRpc.update, {
        caller: callerOf(user),
        user: { ...noChange, mailAddress: other.mailAddress.toUpperCase() },
      }),
      "conflict",
      "USER_EMAIL_TAKEN",
    );
    expect(await row(user.id)).toMatchObject({ username: user.username, mail_address: user.mailAddress });
  });

  it("a username held only by an expired sign-up is taken over (the sign-up is deleted)", async () => {
    const expired = await h.seedUser({ isVerified: false, pendingUntil: new Date(Date.now() - 1000) });
    const user = await h.seedUser();
    const dto = await h.client.call(UsersRpc.update, {
      caller: callerOf(user),
      user: { ...noChange, username: expired.username },
    });
    expect(dto.username).toBe(expired.username);
    expect(await row(expired.id)).toBeUndefined();
    await h.receivedEvent(UsersEvents.deleted, { userId: expired.id });
  });

  it.each([
    ["name", { name: "   " }],
    ["surname", { surname: "" }],
    ["username", { username: "no spaces" }],
    ["username", { username: "ab" }],
    ["mailAddress", { mailAddress: "nope@" }],
  ])("400 naming %s for %j", async (field, fields) => {
    const user = await h.seedUser();
    const error = await h.client
      .call(UsersRpc.update, { caller: callerOf(user), user: { ...noChange, ...fields } })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
    expect((error as Error).message).toContain(field);
  });

  it("404 for a caller that no longer exists", async () => {
    const user = await h.seedUser();
    await h.sql.query(`delete from users."user" where id = $1`, [user.id]);
    await expectAppError(
      h.client.call(UsersRpc.update, { caller: callerOf(user), user: { ...noChange, name: "X" } }),
      "not_found",
      "USER_NOT_FOUND",
    );
  });
});

describe("users.user.list", () => {
  it("answers every user as UserDTO, ordered by id, without invitations", async () => {
    const admin = await h.seedUser({ role: "Admin" });
    await h.seedUser({ isVerified: false, pendingUntil: new Date(Date.now() + 60_000) });
    const list = await h.client.call(UsersRpc.list, { caller: callerOf(admin) });
    const { rows } = await h.sql.query<{ id: number }>(`select id from users."user" order by id`);
    expect(list.map((u) => u.id)).toEqual(rows.map((r) => r.id));
    expect(list.every((u) => u.invitations === null)).toBe(true);
    expect(list.find((u) => u.id === admin.id)).toMatchObject({ role: "Admin", address: admin.address });
  });

  it("403 for a caller who is not an Admin (the gateway checks first; so does the service)", async () => {
    const user = await h.seedUser();
    await expectAppError(
      h.client.call(UsersRpc.list, { caller: callerOf(user) }),
      "forbidden",
      "ROLE_FORBIDDEN",
    );
  });
});
