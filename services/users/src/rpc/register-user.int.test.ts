import { UsersEvents, UsersRpc } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import { expectAppError, randomAddress, uniqueName, useHarness } from "../test/harness.ts";

// The auth service's RPCs (register, byAddress, markVerified) on real Postgres and RabbitMQ.
const h = useHarness("register");

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
    expect(answer).toEqual({ userId: expect.any(Number), replaced: false, resent: false });
    const stored = await row(answer.userId);
    expect(stored).toMatchObject({
      address: input.address,
      username: input.username,
      mail_address: input.mailAddress,
      role: "Base",
      is_verified: false,
      // No proof named: the weaker one.
      proof: "legacy",
    });
    expect((stored?.pending_until as Date | undefined)?.toISOString()).toBe(input.pendingUntil);
  });

  it("stores how the sign-up was proven", async () => {
    const answer = await h.client.call(UsersRpc.register, { ...newUser(), proof: "nonce" });
    expect((await row(answer.userId))?.proof).toBe("nonce");
  });

  it.each([
    ["name", "Ada\u202Eecila"],
    ["name", "\u200B"],
    ["surname", "Love\u2028lace"],
    ["surname", "\uFEFFLovelace"],
    ["username", "ada\u200Dl"],
  ])("refuses a %s with invisible or control characters (%j) with 400 naming it", async (field, value) => {
    const error = await h.client
      .call(UsersRpc.register, { ...newUser(), [field]: value })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
    expect((error as { details: unknown }).details).toEqual([
      { path: `/${field}`, message: expect.any(String) },
    ]);
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
      const existing = await h.seedUser();
      const input = newUser();
      if (field === "address") input.address = existing.address.toLowerCase();
      if (field === "e-mail") input.mailAddress = existing.mailAddress.toUpperCase();
      if (field === "username") input.username = existing.username.toUpperCase();
      await expectAppError(h.client.call(UsersRpc.register, input), "conflict", code);
      expect(await row(existing.id)).toBeDefined();
    });
  });

  it("an unverified sign-up of another address still pending blocks its e-mail and username", async () => {
    const pending = await h.seedUser({ isVerified: false, pendingUntil: new Date(Date.now() + HOUR) });
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
    const changed = await h.seedUser({ isVerified: false, pendingUntil: null });
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
    const changed = await h.seedUser({ isVerified: false, pendingUntil: null });
    await expectAppError(
      h.client.call(UsersRpc.register, newUser({ address: changed.address })),
      "conflict",
      "USER_ADDRESS_TAKEN",
    );
  });

  it("an expired unverified sign-up of another address is deleted and replaced", async () => {
    const expired = await h.seedUser({ isVerified: false, pendingUntil: past() });
    const input = newUser({ username: expired.username, mailAddress: expired.mailAddress });
    const answer = await h.client.call(UsersRpc.register, input);
    expect(answer.replaced).toBe(true);
    expect(answer.userId).not.toBe(expired.id);
    expect(await row(expired.id)).toBeUndefined();
    expect(await h.receivedEvent(UsersEvents.deleted, { userId: expired.id })).toEqual({
      userId: expired.id,
      address: expired.address,
      version: 2,
    });
    // No fence for a sign-up that never verified: nobody can name it in an invitation.
    expect(h.projects.calls).not.toContainEqual({ op: "fence", userId: expired.id });
  });

  it("an expired unverified sign-up of the same address is replaced by a new user", async () => {
    const expired = await h.seedUser({ isVerified: false, pendingUntil: past() });
    const answer = await h.client.call(UsersRpc.register, newUser({ address: expired.address }));
    expect(answer.replaced).toBe(true);
    expect(answer.userId).not.toBe(expired.id);
    expect(await row(expired.id)).toBeUndefined();
  });

  describe("a still-pending sign-up of the same address is never changed by another register (§7)", () => {
    const signUp = async (proof: "legacy" | "nonce", overrides: Parameters<typeof newUser>[0] = {}) => {
      const input = { ...newUser(overrides), proof };
      return { input, answer: await h.client.call(UsersRpc.register, input) };
    };

    it("the same data again (username and e-mail in another case): the same id, nothing changed", async () => {
      const { input, answer } = await signUp("legacy");
      const before = await row(answer.userId);
      const again = await h.client.call(UsersRpc.register, {
        ...input,
        address: input.address.toLowerCase(),
        username: input.username.toUpperCase(),
        mailAddress: input.mailAddress.toUpperCase(),
        pendingUntil: new Date(Date.now() + 48 * HOUR).toISOString(),
      });
      expect(again).toEqual({ userId: answer.userId, replaced: false, resent: true });
      // Username, e-mail, deadline and proof stay as the first sign-up wrote them.
      expect(await row(answer.userId)).toEqual(before);
    });

    it("a nonce-proven sign-up with the same data is re-sent too, and keeps its proof", async () => {
      const { input, answer } = await signUp("nonce");
      expect(await h.client.call(UsersRpc.register, input)).toEqual({
        userId: answer.userId,
        replaced: false,
        resent: true,
      });
      expect((await row(answer.userId))?.proof).toBe("nonce");
    });

    it.each([
      ["legacy", "legacy"],
      ["nonce", "legacy"],
      ["nonce", "nonce"],
    ] as const)(
      "pending %s-proven, other data proven by %s → 409 USER_ADDRESS_TAKEN, unchanged",
      async (first, second) => {
        const { input, answer } = await signUp(first);
        const before = await row(answer.userId);
        for (const other of [
          { username: uniqueName("x") },
          { mailAddress: `${uniqueName("x")}@example.org` },
          { name: "Mallory" },
          { surname: "Evil" },
        ]) {
          await expectAppError(
            h.client.call(UsersRpc.register, { ...input, ...other, proof: second }),
            "conflict",
            "USER_ADDRESS_TAKEN",
          );
        }
        expect(await row(answer.userId)).toEqual(before);
      },
    );

    it("a nonce-proven sign-up replaces a pending legacy one: a new user, the old one deleted", async () => {
      const { input, answer } = await signUp("legacy");
      const fresh = { ...newUser({ address: input.address.toLowerCase() }), proof: "nonce" as const };
      const replacement = await h.client.call(UsersRpc.register, fresh);
      expect(replacement).toEqual({ userId: expect.any(Number), replaced: true, resent: false });
      expect(replacement.userId).not.toBe(answer.userId);
      expect(await row(answer.userId)).toBeUndefined();
      expect(await row(replacement.userId)).toMatchObject({
        address: input.address,
        username: fresh.username,
        mail_address: fresh.mailAddress,
        proof: "nonce",
        is_verified: false,
      });
      expect(await h.receivedEvent(UsersEvents.deleted, { userId: answer.userId })).toEqual({
        userId: answer.userId,
        address: input.address,
        version: 2,
      });
      // The replaced sign-up's username and e-mail are free again.
      const reuse = await h.client.call(UsersRpc.register, {
        ...newUser({ username: input.username, mailAddress: input.mailAddress }),
      });
      expect(reuse.resent).toBe(false);
    });

    it("replacing a pending legacy sign-up still refuses another user's e-mail, and keeps the pending one", async () => {
      const other = await h.seedUser();
      const { input, answer } = await signUp("legacy");
      await expectAppError(
        h.client.call(UsersRpc.register, { ...input, mailAddress: other.mailAddress, proof: "nonce" }),
        "conflict",
        "USER_EMAIL_TAKEN",
      );
      expect(await row(answer.userId)).toMatchObject({ username: input.username, proof: "legacy" });
    });

    it("an expired nonce-proven sign-up is replaced by anyone, even with the legacy proof", async () => {
      const { input, answer } = await signUp("nonce");
      await h.sql.query(`update users."user" set pending_until = $2 where id = $1`, [answer.userId, past()]);
      const again = await h.client.call(UsersRpc.register, {
        ...newUser({ address: input.address }),
        proof: "legacy",
      });
      expect(again).toMatchObject({ replaced: true, resent: false });
      expect(await row(answer.userId)).toBeUndefined();
      expect((await row(again.userId))?.proof).toBe("legacy");
    });
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

  it("sign-ups racing for one address or one e-mail (any case): exactly one wins, the others get the 409 naming it", async () => {
    for (let round = 0; round < 5; round++) {
      const address = randomAddress();
      const mail = `${uniqueName("race")}@example.org`;
      const races = [
        {
          code: "USER_ADDRESS_TAKEN",
          field: "address",
          inputs: [newUser({ address }), newUser({ address: address.toLowerCase() }), newUser({ address })],
        },
        {
          code: "USER_EMAIL_TAKEN",
          field: "mail_address",
          inputs: [newUser({ mailAddress: mail }), newUser({ mailAddress: mail.toUpperCase() })],
        },
      ];
      for (const race of races) {
        const results = await Promise.allSettled(race.inputs.map((u) => h.client.call(UsersRpc.register, u)));
        expect(
          results.filter((r) => r.status === "fulfilled"),
          race.code,
        ).toHaveLength(1);
        for (const r of results) {
          if (r.status === "rejected") expect(r.reason).toMatchObject({ kind: "conflict", code: race.code });
        }
        const value = race.field === "address" ? address : mail;
        const { rows } = await h.sql.query(
          `select 1 from users."user" where lower(${race.field}) = lower($1)`,
          [value],
        );
        expect(rows).toHaveLength(1);
      }
    }
  });

  it("the same sign-up sent three times at once (a double click): one user, the others answer it as re-sent", async () => {
    for (let round = 0; round < 10; round++) {
      const input = newUser();
      const answers = await Promise.all([1, 2, 3].map(() => h.client.call(UsersRpc.register, input)));
      const userId = answers[0]?.userId;
      expect(answers.map((a) => a.userId)).toEqual([userId, userId, userId]);
      expect(answers.filter((a) => !a.resent)).toHaveLength(1);
      const { rows } = await h.sql.query(`select id from users."user" where lower(username) = lower($1)`, [
        input.username,
      ]);
      expect(rows).toEqual([{ id: userId }]);
    }
  });

  it("emits nothing for a plain sign-up (the auth service mails the link)", async () => {
    const before = (await h.outboxPayloads(UsersEvents.deleted)).length;
    await h.client.call(UsersRpc.register, newUser());
    expect(await h.outboxPayloads(UsersEvents.deleted)).toHaveLength(before);
  });
});

describe("users.user.by-address", () => {
  it("finds the account whatever the letter case, with its verification state", async () => {
    const user = await h.seedUser({ role: "Whitelist" });
    expect(await h.client.call(UsersRpc.byAddress, { address: user.address.toLowerCase() })).toEqual({
      id: user.id,
      address: user.address,
      username: user.username,
      name: "Ada",
      surname: "Lovelace",
      mailAddress: user.mailAddress,
      role: "Whitelist",
      chainRole: null,
      isVerified: true,
      version: 1,
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
