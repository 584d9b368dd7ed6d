import { UsersEvents, UsersRpc } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  expectAppError,
  type Harness,
  outboxPayloads,
  randomAddress,
  receivedEvent,
  seedUser,
  startHarness,
  uniqueName,
} from "../test/harness.ts";

// The auth service's RPCs (register, byAddress, markVerified) on real Postgres and RabbitMQ.
let h: Harness;
beforeAll(async () => {
  h = await startHarness("register");
});
afterAll(() => h?.stop());

const HOUR = 3_600_000;
const future = () => new Date(Date.now() + 24 * HOUR).toISOString();
const past = () => new Date(Date.now() - HOUR);

function newUser(overrides: Partial<{ address: string; username: string; mailAddress: string }> = {}) {
  const username = overrides.username ?? uniqueName("r");
  return {
    address: overrides.address ?? randomAddress(),
    name: "Grace",
    surname: "Hopper",
    username,
    mailAddress: overrides.mailAddress ?? `${username}@example.org`,
    pendingUntil: future(),
  };
}

async function row(id: number) {
  const { rows } = await h.sql.query(`select * from users."user" where id = $1`, [id]);
  return rows[0] as Record<string, unknown> | undefined;
}

describe("users.user.register", () => {
  it("creates an unverified Base user with the address stored EIP-55 and the pending deadline", async () => {
    const input = newUser();
    const lower = { ...input, address: input.address.toLowerCase() };
    const answer = await h.client.call(UsersRpc.register, lower);
    expect(answer.replaced).toBe(false);
    const stored = await row(answer.userId);
    expect(stored).toMatchObject({
      address: input.address,
      username: input.username,
      mail_address: input.mailAddress,
      role: "Base",
      is_verified: false,
    });
    expect((stored?.pending_until as Date | undefined)?.toISOString()).toBe(input.pendingUntil);
  });

  it("trims the fields and refuses an invalid e-mail with 400 naming the field", async () => {
    const input = newUser();
    const answer = await h.client.call(UsersRpc.register, { ...input, name: "  Grace  " });
    expect((await row(answer.userId))?.name).toBe("Grace");
    const error = await h.client
      .call(UsersRpc.register, { ...newUser(), mailAddress: "not-an-email" })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
    expect((error as Error).message).toMatch(/mailAddress/);
  });

  it("400 for a pendingUntil that is not a date-time", async () => {
    await expectAppError(
      h.client.call(UsersRpc.register, { ...newUser(), pendingUntil: "tomorrow-ish" }),
      "validation",
      "VALIDATION_FAILED",
    );
  });

  describe("a verified user blocks, naming which field clashes", () => {
    it.each([
      ["address", "USER_ADDRESS_TAKEN"],
      ["e-mail", "USER_EMAIL_TAKEN"],
      ["username", "USER_USERNAME_TAKEN"],
    ])("same %s (other case) → 409 %s", async (field, code) => {
      const existing = await seedUser(h.sql);
      const input = newUser();
      if (field === "address") input.address = existing.address.toLowerCase();
      if (field === "e-mail") input.mailAddress = existing.mailAddress.toUpperCase();
      if (field === "username") input.username = existing.username.toUpperCase();
      await expectAppError(h.client.call(UsersRpc.register, input), "conflict", code);
      expect(await row(existing.id)).toBeDefined();
    });
  });

  it("an unverified sign-up of another address still pending blocks its e-mail and username", async () => {
    const pending = await seedUser(h.sql, { isVerified: false, pendingUntil: new Date(Date.now() + HOUR) });
    await expectAppError(
      h.client.call(UsersRpc.register, newUser({ mailAddress: pending.mailAddress })),
      "conflict",
      "USER_EMAIL_TAKEN",
    );
    await expectAppError(
      h.client.call(
        UsersRpc.register,
        newUser({ username: pending.username.toUpperCase(), mailAddress: `${uniqueName()}@example.org` }),
      ),
      "conflict",
      "USER_USERNAME_TAKEN",
    );
  });

  it("an unverified account that changed its e-mail (no deadline) blocks like a verified one", async () => {
    const changed = await seedUser(h.sql, { isVerified: false, pendingUntil: null });
    await expectAppError(
      h.client.call(
        UsersRpc.register,
        newUser({ username: changed.username, mailAddress: `${uniqueName()}@example.org` }),
      ),
      "conflict",
      "USER_USERNAME_TAKEN",
    );
  });

  it("an account awaiting its changed e-mail's link is not a sign-up: its address → 409", async () => {
    const changed = await seedUser(h.sql, { isVerified: false, pendingUntil: null });
    await expectAppError(
      h.client.call(UsersRpc.register, newUser({ address: changed.address })),
      "conflict",
      "USER_ADDRESS_TAKEN",
    );
  });

  it("an expired unverified sign-up of another address is deleted and replaced", async () => {
    const expired = await seedUser(h.sql, { isVerified: false, pendingUntil: past() });
    const input = newUser({ username: expired.username, mailAddress: expired.mailAddress });
    const answer = await h.client.call(UsersRpc.register, input);
    expect(answer.replaced).toBe(true);
    expect(answer.userId).not.toBe(expired.id);
    expect(await row(expired.id)).toBeUndefined();
    expect(await receivedEvent(h, UsersEvents.deleted, { userId: expired.id })).toEqual({
      userId: expired.id,
      address: expired.address,
    });
  });

  it("an expired unverified sign-up of the same address is replaced by a new user", async () => {
    const expired = await seedUser(h.sql, { isVerified: false, pendingUntil: past() });
    const answer = await h.client.call(UsersRpc.register, newUser({ address: expired.address }));
    expect(answer.replaced).toBe(true);
    expect(answer.userId).not.toBe(expired.id);
    expect(await row(expired.id)).toBeUndefined();
  });

  it("a still-pending sign-up of the same address is updated in place (same id)", async () => {
    const first = newUser();
    const { userId } = await h.client.call(UsersRpc.register, first);
    const again = newUser({ address: first.address.toLowerCase() });
    const answer = await h.client.call(UsersRpc.register, again);
    expect(answer).toEqual({ userId, replaced: true });
    expect(await row(userId)).toMatchObject({
      username: again.username,
      mail_address: again.mailAddress,
      address: first.address,
      is_verified: false,
    });
    expect(((await row(userId))?.pending_until as Date | undefined)?.toISOString()).toBe(again.pendingUntil);
  });

  it("updating a pending sign-up in place still refuses another user's e-mail", async () => {
    const other = await seedUser(h.sql);
    const first = newUser();
    await h.client.call(UsersRpc.register, first);
    await expectAppError(
      h.client.call(UsersRpc.register, { ...first, mailAddress: other.mailAddress }),
      "conflict",
      "USER_EMAIL_TAKEN",
    );
  });

  it("two sign-ups racing for one username: exactly one wins, the other gets 409", async () => {
    for (let round = 0; round < 5; round++) {
      const username = uniqueName("race");
      const results = await Promise.allSettled([
        h.client.call(UsersRpc.register, newUser({ username, mailAddress: `${username}-a@example.org` })),
        h.client.call(UsersRpc.register, newUser({ username, mailAddress: `${username}-b@example.org` })),
      ]);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      const rejected = results.find((r) => r.status === "rejected");
      expect(rejected?.reason).toMatchObject({ kind: "conflict", code: "USER_USERNAME_TAKEN" });
      const { rows } = await h.sql.query(`select 1 from users."user" where lower(username) = lower($1)`, [
        username,
      ]);
      expect(rows).toHaveLength(1);
    }
  });

  it("emits nothing for a plain sign-up (the auth service mails the link)", async () => {
    const before = (await outboxPayloads(h.sql, UsersEvents.deleted)).length;
    await h.client.call(UsersRpc.register, newUser());
    expect(await outboxPayloads(h.sql, UsersEvents.deleted)).toHaveLength(before);
  });
});

describe("users.user.by-address", () => {
  it("finds the account whatever the letter case, with its verification state", async () => {
    const user = await seedUser(h.sql, { role: "Whitelist" });
    expect(await h.client.call(UsersRpc.byAddress, { address: user.address.toLowerCase() })).toEqual({
      id: user.id,
      address: user.address,
      username: user.username,
      name: "Ada",
      surname: "Lovelace",
      mailAddress: user.mailAddress,
      role: "Whitelist",
      isVerified: true,
    });
  });

  it("answers null for an unknown address", async () => {
    expect(await h.client.call(UsersRpc.byAddress, { address: randomAddress() })).toBeNull();
  });
});

describe("users.user.mark-verified", () => {
  it("verifies when the e-mail still matches (any case), and is idempotent", async () => {
    const { userId } = await h.client.call(UsersRpc.register, newUser());
    const mail = (await row(userId))?.mail_address as string;
    const first = await h.client.call(UsersRpc.markVerified, { userId, mailAddress: mail.toUpperCase() });
    expect(first).toMatchObject({ id: userId, isVerified: true });
    expect((await row(userId))?.pending_until).toBeNull();
    expect(await h.client.call(UsersRpc.markVerified, { userId, mailAddress: mail })).toEqual(first);
  });

  it("refuses with 409 when the e-mail changed since the link was sent", async () => {
    const { userId } = await h.client.call(UsersRpc.register, newUser());
    await expectAppError(
      h.client.call(UsersRpc.markVerified, { userId, mailAddress: "old@example.org" }),
      "conflict",
      "VERIFICATION_TOKEN_INVALID",
    );
    expect((await row(userId))?.is_verified).toBe(false);
  });

  it("404 for a user that does not exist", async () => {
    await expectAppError(
      h.client.call(UsersRpc.markVerified, { userId: 999_999, mailAddress: "x@example.org" }),
      "not_found",
      "USER_NOT_FOUND",
    );
  });
});
