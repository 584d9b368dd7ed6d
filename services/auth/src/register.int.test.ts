import { createHash } from "node:crypto";
import { waitFor } from "@fundraise/bus/testing";
import { AuthEvents, AuthRpc, type PayloadOf } from "@fundraise/protocol";
import type { HDNodeWallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LINK_EXPIRED_MESSAGE, VERIFIED_MESSAGE } from "./sign-in/auth.service.ts";
import {
  failureOf,
  type Harness,
  legacyLogin,
  newWallet,
  origin,
  PUBLIC_BASE_URL,
  siweMessage,
  startHarness,
  verifyToken,
} from "./test/harness.ts";
import { verificationLinkIn } from "./test/smtp.ts";

// Sign-up and e-mail verification on the real servers, with a real SMTP server receiving the mail. The
// users service is another team's work in progress: its RPCs are answered by an in-test stand-in.
let h: Harness;
const registered: PayloadOf<typeof AuthEvents.registered>[] = [];
const verified: PayloadOf<typeof AuthEvents.verified>[] = [];

beforeAll(async () => {
  h = await startHarness({ REGISTER_PER_ADDRESS_PER_HOUR: "3" });
  await h.client.subscribe("test", AuthEvents.registered, async (payload) => {
    registered.push(payload);
  });
  await h.client.subscribe("test", AuthEvents.verified, async (payload) => {
    verified.push(payload);
  });
});

afterAll(async () => {
  await h?.close();
});

let counter = 0;
function form(overrides: Record<string, string | null> = {}) {
  counter += 1;
  return {
    name: "  Ada ",
    surname: "Lovelace",
    username: `ada_${counter}_${Date.now() % 100000}`,
    mailAddress: `Ada.${counter}.${Date.now() % 100000}@Example.org`,
    ...overrides,
  };
}

async function register(wallet: HDNodeWallet, fields = form(), message?: string) {
  const signedMessage = await wallet.signMessage(message ?? "REGISTER");
  const id = await h.client.call(AuthRpc.register, {
    register: { ...fields, signedMessage, ...(message === undefined ? {} : { message }) },
    origin,
  });
  return { id, fields };
}

const verify = (email: string, token: string) => h.client.call(AuthRpc.verifyEmail, { email, token });

async function rowsOf(userId: number) {
  const { rows } = await h.sql.query(
    "select token_hash, mail_address, expires_at, used_at from auth.email_verification where user_id = $1 order by id",
    [userId],
  );
  return rows as { token_hash: string; mail_address: string; expires_at: Date; used_at: Date | null }[];
}

describe("users service stand-in: register and verify", () => {
  it("creates the user with the recovered address, mails the link, and verifies on the link", async () => {
    const wallet = newWallet();
    const { id, fields } = await register(wallet);
    expect(id).toMatch(/^\d+$/);
    const userId = Number(id);

    // What the users service was asked: the address recovered from the signature, trimmed fields.
    const asked = h.users.calls.register.at(-1) as Record<string, string>;
    expect(asked).toMatchObject({
      address: wallet.address,
      name: "Ada",
      surname: "Lovelace",
      username: fields.username,
    });
    const pendingFor = Date.parse(asked.pendingUntil ?? "") - Date.now();
    expect(pendingFor).toBeGreaterThan(23 * 3_600_000);
    expect(pendingFor).toBeLessThanOrEqual(24 * 3_600_000);

    // The mail, received by the SMTP server: the link to the gateway with the e-mail and the token.
    const mail = await h.smtp.next(fields.mailAddress);
    expect(mail.subject).toBe("Verify your e-mail address");
    const link = verificationLinkIn(mail);
    expect(`${link.url.origin}${link.url.pathname}`).toBe(`${PUBLIC_BASE_URL}/Authentication/verify-email`);
    expect(link.email).toBe(fields.mailAddress);
    expect(link.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(mail.html).toContain(link.url.search.replaceAll("&", "&#38;"));

    // Only the token's SHA-256 is stored.
    const [row] = await rowsOf(userId);
    expect(row?.token_hash).toBe(createHash("sha256").update(link.token).digest("hex"));
    const { rows } = await h.sql.query("select * from auth.email_verification");
    expect(JSON.stringify(rows)).not.toContain(link.token);

    await waitFor(() => registered.some((e) => e.userId === userId), 10_000, "auth.user.registered");
    expect(registered.find((e) => e.userId === userId)).toEqual({ userId, address: wallet.address });

    // Unverified users cannot sign in; the link verifies, then they can.
    expect((await failureOf(legacyLogin(h, wallet))).code).toBe("EMAIL_NOT_VERIFIED");
    expect(await verify(link.email, link.token)).toBe(VERIFIED_MESSAGE);
    expect(h.users.calls.markVerified).toContainEqual({ userId, mailAddress: fields.mailAddress });
    await waitFor(() => verified.some((e) => e.userId === userId), 10_000, "auth.user.verified");
    const { claims } = await verifyToken(h, await legacyLogin(h, wallet));
    expect(claims).toMatchObject({
      sub: id,
      unique_name: fields.username,
      family_name: "Lovelace",
      role: "Base",
    });
  });

  it("answers 200 again for a link followed twice, without verifying twice", async () => {
    const wallet = newWallet();
    const { id, fields } = await register(wallet);
    const link = verificationLinkIn(await h.smtp.next(fields.mailAddress));
    expect(await verify(link.email, link.token)).toBe(VERIFIED_MESSAGE);
    const calls = h.users.calls.markVerified.length;
    expect(await verify(link.email.toUpperCase(), link.token)).toBe(VERIFIED_MESSAGE);
    expect(h.users.calls.markVerified.length).toBe(calls);
    await waitFor(() => verified.some((e) => e.userId === Number(id)), 10_000, "auth.user.verified");
    expect(verified.filter((e) => e.userId === Number(id))).toHaveLength(1);
  });

  it("refuses a wrong token or another e-mail with 400 and changes nothing", async () => {
    const wallet = newWallet();
    const { id, fields } = await register(wallet);
    const link = verificationLinkIn(await h.smtp.next(fields.mailAddress));
    const invalid = { kind: "validation", code: "VERIFICATION_TOKEN_INVALID" };
    const wrongToken = `${link.token.slice(0, -1)}${link.token.endsWith("A") ? "B" : "A"}`;
    expect(await failureOf(verify(link.email, wrongToken))).toMatchObject(invalid);
    expect(await failureOf(verify("someone.else@example.org", link.token))).toMatchObject(invalid);
    expect(await failureOf(verify(link.email, "short"))).toMatchObject(invalid);
    expect((await rowsOf(Number(id)))[0]?.used_at).toBeNull();
    expect(h.users.rows.get(Number(id))?.isVerified).toBe(false);
    // The right link still works afterwards.
    expect(await verify(link.email, link.token)).toBe(VERIFIED_MESSAGE);
  });

  it("answers 410 for an expired link, and the user stays unverified", async () => {
    const wallet = newWallet();
    const { id, fields } = await register(wallet);
    const link = verificationLinkIn(await h.smtp.next(fields.mailAddress));
    await h.sql.query(
      "update auth.email_verification set expires_at = now() - interval '1 minute' where user_id = $1",
      [Number(id)],
    );
    expect(await failureOf(verify(link.email, link.token))).toEqual({
      kind: "gone",
      code: "VERIFICATION_LINK_EXPIRED",
      message: LINK_EXPIRED_MESSAGE,
    });
    expect(h.users.rows.get(Number(id))?.isVerified).toBe(false);
  });

  it("keeps the user when the mail cannot be sent, and re-sends when registering again", async () => {
    const wallet = newWallet();
    const fields = form();
    h.smtp.refuse = true;
    let first: string;
    try {
      first = (await register(wallet, fields)).id;
    } finally {
      h.smtp.refuse = false;
    }
    expect(h.users.rows.get(Number(first))?.address).toBe(wallet.address);
    expect((await rowsOf(Number(first))).filter((r) => r.used_at === null)).toHaveLength(1);
    const [lost] = await rowsOf(Number(first));

    // Registering again (the users service answers 409 for the pending sign-up): same user, new mail.
    const again = await register(wallet, fields);
    expect(again.id).toBe(first);
    const link = verificationLinkIn(await h.smtp.next(fields.mailAddress));
    const rows = await rowsOf(Number(first));
    expect(rows).toHaveLength(1);
    // The re-sent link replaces the lost one and keeps the sign-up's deadline.
    expect(rows[0]?.token_hash).not.toBe(lost?.token_hash);
    expect(rows[0]?.expires_at.getTime()).toBe(lost?.expires_at.getTime());
    expect(await verify(link.email, link.token)).toBe(VERIFIED_MESSAGE);
    // Re-sending is not a new registration: one auth.user.registered event.
    await waitFor(() => registered.some((e) => e.userId === Number(first)), 10_000, "auth.user.registered");
    expect(registered.filter((e) => e.userId === Number(first))).toHaveLength(1);
  });

  it("passes the users service's 409 through, naming the clash", async () => {
    const first = await register(newWallet());
    const failure = await failureOf(
      register(newWallet(), form({ username: first.fields.username.toUpperCase() })),
    );
    expect(failure).toMatchObject({ kind: "conflict", code: "USER_USERNAME_TAKEN" });
    // A verified user's address cannot sign up again, even with the same e-mail.
    const wallet = newWallet();
    h.users.seed({ address: wallet.address, mailAddress: "taken@example.org" });
    const taken = await failureOf(register(wallet, form({ mailAddress: "taken@example.org" })));
    expect(taken).toMatchObject({ kind: "conflict", code: "USER_ADDRESS_TAKEN" });
  });

  it("refuses bad input with 400 naming the field, and writes nothing", async () => {
    const wallet = newWallet();
    const before = h.users.calls.register.length;
    const cases: [Record<string, string | null>, string][] = [
      [{ mailAddress: "not-an-email" }, "mailAddress"],
      [{ username: "a b" }, "username"],
      [{ username: "ab" }, "username"],
      [{ name: "   " }, "name"],
      [{ surname: null }, "surname"],
    ];
    for (const [overrides, field] of cases) {
      const failure = await failureOf(register(wallet, form(overrides)));
      expect(failure).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
      expect(failure.message).toContain(field);
    }
    const noSignature = await failureOf(
      h.client.call(AuthRpc.register, { register: { ...form(), signedMessage: null }, origin }),
    );
    expect(noSignature.message).toContain("signedMessage");
    expect(h.users.calls.register.length).toBe(before);
    const { rows } = await h.sql.query("select count(*)::int as n from auth.email_verification");
    const { rows: keys } = await h.sql.query(
      "select 1 from auth.outbox where lower(convert_from(payload, 'UTF8')) like $1",
      [`%${wallet.address.toLowerCase()}%`],
    );
    expect(rows[0]?.n).toBeGreaterThan(0); // other tests' rows exist, so the count query works ...
    expect(keys).toHaveLength(0); // ... and none belongs to this wallet.
    expect(await h.redis.keys(`${h.prefix}rate:register:${wallet.address.toLowerCase()}*`)).toEqual([]);
  });

  it("limits sign-ups per address (429)", async () => {
    const wallet = newWallet();
    const outcomes: string[] = [];
    // 2 × limit + 1 calls: whichever way an hour boundary splits them, one window sees more than 3.
    for (let i = 0; i < 7; i++) {
      outcomes.push(
        await register(wallet, form()).then(
          () => "ok",
          (e: { code: string }) => e.code,
        ),
      );
    }
    // The first creates the user; the next clash on the address (409) until the hourly limit (3) is hit.
    expect(outcomes.slice(0, 3)).toEqual(["ok", "USER_ADDRESS_TAKEN", "USER_ADDRESS_TAKEN"]);
    expect(outcomes).toContain("RATE_LIMITED");
  });
});

describe("users service stand-in: register with Sign-In with Ethereum", () => {
  it("takes the address from the message and consumes the issued nonce", async () => {
    const wallet = newWallet();
    const nonce = await h.client.call(AuthRpc.nonce, { address: wallet.address, origin });
    const message = siweMessage(h, wallet.address, nonce, { statement: "Create my Fundraise account." });
    const { id, fields } = await register(wallet, form(), message);
    expect(h.users.rows.get(Number(id))?.address).toBe(wallet.address);
    await h.smtp.next(fields.mailAddress);
    // The nonce is gone: the same signed message cannot register again.
    const replay = await failureOf(register(wallet, form(), message));
    expect(replay).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
  });

  it("refuses a message signed by another key, or without an issued nonce", async () => {
    const wallet = newWallet();
    const nonce = await h.client.call(AuthRpc.nonce, { address: wallet.address, origin });
    const message = siweMessage(h, wallet.address, nonce);
    const signedMessage = await newWallet().signMessage(message);
    const forged = await failureOf(
      h.client.call(AuthRpc.register, { register: { ...form(), signedMessage, message }, origin }),
    );
    expect(forged).toMatchObject({
      kind: "validation",
      message: "The signature or the signed message is not valid.",
    });
    const noNonce = await failureOf(register(newWallet(), form(), siweMessage(h, wallet.address, 12345678)));
    expect(noNonce).toMatchObject({ kind: "validation" });
  });
});
