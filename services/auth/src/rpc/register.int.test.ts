import { createHash } from "node:crypto";
import { waitFor } from "@fundraise/bus/testing";
import { AuthEvents, AuthRpc, type PayloadOf, UsersRpc } from "@fundraise/protocol";
import type { Wallet } from "ethers";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { LINK_EXPIRED_MESSAGE, MAIL_NOT_SENT_MESSAGE, VERIFIED_MESSAGE } from "../sign-up/sign-up.service.ts";
import {
  failureOf,
  type Harness,
  legacyLogin,
  newOrigin,
  newWallet,
  PUBLIC_BASE_URL,
  siweMessage,
  startHarness,
  verifyToken,
} from "../test/harness.ts";
import { verificationLinkIn } from "../test/smtp.ts";

// Sign-up and e-mail verification on the real servers, with the real users service and a real SMTP server
// receiving the mail.
let h: Harness;
const registered: PayloadOf<typeof AuthEvents.registered>[] = [];
const verified: PayloadOf<typeof AuthEvents.verified>[] = [];

beforeAll(async () => {
  h = await startHarness({ REGISTER_PER_IP_ADDRESS_PER_HOUR: "3", REGISTER_PER_IP_PER_HOUR: "8" });
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

// Each test calls from a client IP of its own: the per-IP limits of one test never touch another's.
let origin: { ip: string };
beforeEach(() => {
  origin = newOrigin();
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

/** Register as a client does: the signature of `message` (default: the legacy `REGISTER`), sent alone or with it. */
async function register(
  wallet: Wallet,
  fields = form(),
  message?: string,
  options: { from?: { ip: string }; signedMessage?: string } = {},
) {
  const signedMessage = options.signedMessage ?? (await wallet.signMessage(message ?? "REGISTER"));
  const { data: id, message: note } = await h.client.callWithMessage(AuthRpc.register, {
    register: { ...fields, signedMessage, ...(message === undefined ? {} : { message }) },
    origin: options.from ?? origin,
  });
  return { id, fields, signedMessage, note };
}

/** `REGISTER: <nonce>` with a nonce from GetNonce. */
async function registerWithNonce(wallet: Wallet, fields = form()) {
  const nonce = await h.client.call(AuthRpc.nonce, { address: wallet.address, origin });
  return { ...(await register(wallet, fields, `REGISTER: ${nonce}`)), nonce };
}

const verify = (email: string, token: string) => h.client.call(AuthRpc.verifyEmail, { email, token });

async function rowsOf(userId: number) {
  const { rows } = await h.sql.query(
    "select token_hash, mail_address, expires_at, used_at from auth.email_verification where user_id = $1 order by id",
    [userId],
  );
  return rows as { token_hash: string; mail_address: string; expires_at: Date; used_at: Date | null }[];
}

/** The users service's row for the address. */
async function userRow(address: string) {
  const { rows } = await h.users.sql.query(
    `select id, name, surname, username, mail_address, is_verified, pending_until, proof
       from users."user" where lower(address) = lower($1)`,
    [address],
  );
  return rows[0] as
    | {
        id: number;
        name: string;
        surname: string;
        username: string;
        mail_address: string;
        is_verified: boolean;
        pending_until: Date | null;
        proof: string;
      }
    | undefined;
}

const mailsTo = (address: string) =>
  h.smtp.received.filter((m) => m.to.some((to) => to.toLowerCase() === address.toLowerCase()));

describe("register and verify", () => {
  it("creates the user with the recovered address, mails the link, and verifies on the link", async () => {
    const wallet = newWallet();
    const { id, fields } = await register(wallet);
    expect(id).toMatch(/^\d+$/);
    const userId = Number(id);

    // What the users service was asked: the address recovered from the signature, trimmed fields, and
    // the proof (the constant `REGISTER` text: legacy).
    const asked = h.users.requests(UsersRpc.register).at(-1);
    expect(asked).toMatchObject({
      address: wallet.address,
      name: "Ada",
      surname: "Lovelace",
      username: fields.username,
      mailAddress: fields.mailAddress,
      proof: "legacy",
    });
    const pendingFor = Date.parse(asked?.pendingUntil ?? "") - Date.now();
    expect(pendingFor).toBeGreaterThan(23 * 3_600_000);
    expect(pendingFor).toBeLessThanOrEqual(24 * 3_600_000);
    // … and what it stored.
    expect(await userRow(wallet.address)).toMatchObject({
      id: userId,
      name: "Ada",
      username: fields.username,
      is_verified: false,
      proof: "legacy",
    });

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
    expect((await failureOf(legacyLogin(h, wallet, origin))).code).toBe("EMAIL_NOT_VERIFIED");
    expect(await verify(link.email, link.token)).toBe(VERIFIED_MESSAGE);
    expect(h.users.requests(UsersRpc.markVerified)).toContainEqual({
      userId,
      mailAddress: fields.mailAddress,
    });
    expect((await userRow(wallet.address))?.is_verified).toBe(true);
    await waitFor(() => verified.some((e) => e.userId === userId), 10_000, "auth.user.verified");
    const { claims } = await verifyToken(h, await legacyLogin(h, wallet, origin));
    expect(claims).toMatchObject({
      sub: id,
      unique_name: fields.username,
      // The wallet address, as rules.md §2.13 and the first backend have it (not the surname).
      family_name: wallet.address,
      role: "Base",
    });
  });

  it("answers 200 again for a link followed twice, without verifying twice", async () => {
    const wallet = newWallet();
    const { id, fields } = await register(wallet);
    const link = verificationLinkIn(await h.smtp.next(fields.mailAddress));
    expect(await verify(link.email, link.token)).toBe(VERIFIED_MESSAGE);
    const calls = h.users.requests(UsersRpc.markVerified).length;
    expect(await verify(link.email.toUpperCase(), link.token)).toBe(VERIFIED_MESSAGE);
    expect(h.users.requests(UsersRpc.markVerified)).toHaveLength(calls);
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
    expect((await userRow(wallet.address))?.is_verified).toBe(false);
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
    expect((await userRow(wallet.address))?.is_verified).toBe(false);
  });

  it("keeps the user when the mail cannot be sent, and re-sends when registering again", async () => {
    const wallet = newWallet();
    const fields = form();
    h.smtp.refuse = true;
    let first: string;
    try {
      const answer = await register(wallet, fields);
      first = answer.id;
      // The answer says so (rules.md §2.9), in the envelope's message.
      expect(answer.note).toBe(MAIL_NOT_SENT_MESSAGE);
    } finally {
      h.smtp.refuse = false;
    }
    expect((await h.users.byAddress(wallet.address))?.id).toBe(Number(first));
    expect((await rowsOf(Number(first))).filter((r) => r.used_at === null)).toHaveLength(1);
    const [lost] = await rowsOf(Number(first));
    const pendingUntil = (await userRow(wallet.address))?.pending_until;

    // Registering again with the same data: the users service answers the pending sign-up (`resent`).
    const again = await register(wallet, fields);
    expect(again.id).toBe(first);
    expect(again.note).toBeNull();
    expect(h.users.requests(UsersRpc.register).length).toBeGreaterThanOrEqual(2);
    const link = verificationLinkIn(await h.smtp.next(fields.mailAddress));
    const rows = await rowsOf(Number(first));
    expect(rows).toHaveLength(1);
    // The re-sent link replaces the lost one and keeps the sign-up's deadline, which the users service
    // keeps too.
    expect(rows[0]?.token_hash).not.toBe(lost?.token_hash);
    expect(rows[0]?.expires_at.getTime()).toBe(lost?.expires_at.getTime());
    expect((await userRow(wallet.address))?.pending_until).toEqual(pendingUntil);
    expect(await verify(link.email, link.token)).toBe(VERIFIED_MESSAGE);
    // Re-sending is not a new registration: one auth.user.registered event.
    await waitFor(() => registered.some((e) => e.userId === Number(first)), 10_000, "auth.user.registered");
    expect(registered.filter((e) => e.userId === Number(first))).toHaveLength(1);
  });

  it("sends sign-ups' mail over open connections, and again after the mail server dropped them", async () => {
    const before = h.smtp.connections;
    const sent = [form(), form(), form()];
    for (const fields of sent) await register(newWallet(), fields);
    for (const fields of sent) await h.smtp.next(fields.mailAddress);
    // Pooled: three mails one after the other took at most one new connection (none when one was open).
    expect(h.smtp.connections - before).toBeLessThanOrEqual(1);
    // The server closed them (a restart, an idle timeout): the next sign-up's mail still goes out.
    h.smtp.dropConnections();
    const dropped = h.smtp.connections;
    const after = form();
    const answer = await register(newWallet(), after);
    expect(answer.note).toBeNull();
    expect(verificationLinkIn(await h.smtp.next(after.mailAddress)).email).toBe(after.mailAddress);
    expect(h.smtp.connections).toBeGreaterThan(dropped);
  });

  it("passes the users service's 409 through, naming the clash", async () => {
    const first = await register(newWallet());
    const failure = await failureOf(
      register(newWallet(), form({ username: first.fields.username.toUpperCase() })),
    );
    expect(failure).toMatchObject({ kind: "conflict", code: "USER_USERNAME_TAKEN" });
    const mailTaken = await failureOf(
      register(newWallet(), form({ mailAddress: first.fields.mailAddress.toLowerCase() })),
    );
    expect(mailTaken).toMatchObject({ kind: "conflict", code: "USER_EMAIL_TAKEN" });
    // A verified user's address cannot sign up again, even with the same data.
    const wallet = newWallet();
    const user = await h.users.seed({ address: wallet.address });
    const taken = await failureOf(
      register(
        wallet,
        form({
          name: user.name,
          surname: user.surname,
          username: user.username,
          mailAddress: user.mailAddress,
        }),
      ),
    );
    expect(taken).toMatchObject({ kind: "conflict", code: "USER_ADDRESS_TAKEN" });
  });

  it("refuses bad input with 400 naming the field, and writes nothing", async () => {
    const wallet = newWallet();
    const before = h.users.requests(UsersRpc.register).length;
    const cases: [Record<string, string | null>, string][] = [
      [{ mailAddress: "not-an-email" }, "mailAddress"],
      [{ username: "a b" }, "username"],
      [{ username: "ab" }, "username"],
      [{ name: "   " }, "name"],
      [{ surname: null }, "surname"],
      // Names are printable (rules.md §7.8): bidi overrides and isolates, zero-width characters, line
      // separators and other control or format characters are refused; invisible-only is missing.
      [{ name: "\u200B" }, "name"],
      [{ name: "\u200B\u200C\u200D\u2060\uFEFF" }, "name"],
      [{ name: "Ada\u202Eecalevol" }, "name"],
      [{ surname: "Love\u2066lace\u2069" }, "surname"],
      [{ surname: "Love\u2028lace" }, "surname"],
      [{ name: "\uFEFFAda" }, "name"],
      [{ name: "A\u0007da" }, "name"],
      [{ username: "ada\u200B" }, "username"],
    ];
    for (const [overrides, field] of cases) {
      const failure = await failureOf(register(wallet, form(overrides)));
      expect(failure, JSON.stringify(overrides)).toMatchObject({
        kind: "validation",
        code: "VALIDATION_FAILED",
      });
      expect(failure.message).toContain(field);
    }
    const noSignature = await failureOf(
      h.client.call(AuthRpc.register, { register: { ...form(), signedMessage: null }, origin }),
    );
    expect(noSignature.message).toContain("signedMessage");
    expect(h.users.requests(UsersRpc.register)).toHaveLength(before);
    expect(await userRow(wallet.address)).toBeUndefined();
    const { rows: keys } = await h.sql.query(
      "select 1 from auth.outbox where lower(convert_from(payload, 'UTF8')) like $1",
      [`%${wallet.address.toLowerCase()}%`],
    );
    expect(keys).toHaveLength(0);
    expect(await h.redis.keys(`${h.prefix}rate:register:*${wallet.address.toLowerCase()}*`)).toEqual([]);
  });

  it("limits sign-ups per client IP and address (429), never per address alone", async () => {
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
    // The first creates the pending sign-up; other data for it is 409 until the limit (3) is hit.
    expect(outcomes.slice(0, 3)).toEqual(["ok", "USER_ADDRESS_TAKEN", "USER_ADDRESS_TAKEN"]);
    expect(outcomes).toContain("RATE_LIMITED");
    expect(outcomes.filter((o) => !["ok", "USER_ADDRESS_TAKEN", "RATE_LIMITED"].includes(o))).toEqual([]);
    // Another client is not limited by it: the users service answers.
    const other = await failureOf(register(wallet, form(), undefined, { from: newOrigin() }));
    expect(other.code).toBe("USER_ADDRESS_TAKEN");
  });

  it("limits sign-ups per client IP across addresses (429)", async () => {
    const outcomes: string[] = [];
    for (let i = 0; i < 17; i++) {
      outcomes.push(
        await register(newWallet(), form()).then(
          () => "ok",
          (e: { code: string }) => e.code,
        ),
      );
    }
    expect(outcomes.slice(0, 8)).toEqual(Array(8).fill("ok"));
    expect(outcomes).toContain("RATE_LIMITED");
  });
});

describe("a replayed `REGISTER` signature (rules.md §7.2)", () => {
  it("cannot change a pending sign-up: other data is 409, the owner's link still verifies", async () => {
    const owner = newWallet();
    const { id, fields, signedMessage } = await register(owner);
    const before = await userRow(owner.address);
    // Someone who saw the signature sends it with their own name, username and e-mail.
    const attacker = { from: newOrigin(), signedMessage };
    const stolen = [
      form({ mailAddress: "mallory@example.org" }),
      form({ name: "Mallory", username: fields.username, mailAddress: fields.mailAddress }),
      form({ username: "mallory_x", mailAddress: fields.mailAddress }),
    ];
    for (const data of stolen) {
      expect(await failureOf(register(owner, data, undefined, attacker))).toMatchObject({
        kind: "conflict",
        code: "USER_ADDRESS_TAKEN",
      });
    }
    expect(await userRow(owner.address)).toEqual(before);
    expect(mailsTo("mallory@example.org")).toHaveLength(0);
    const link = verificationLinkIn(await h.smtp.next(fields.mailAddress));
    expect(await verify(link.email, link.token)).toBe(VERIFIED_MESSAGE);
    expect((await userRow(owner.address))?.id).toBe(Number(id));
  });

  it("with the same data only re-sends the link to the same address: same id, username unchanged", async () => {
    const owner = newWallet();
    const { id, fields, signedMessage } = await register(owner);
    await h.smtp.next(fields.mailAddress);
    const before = await userRow(owner.address);
    const again = await register(
      owner,
      { ...fields, username: fields.username.toUpperCase(), mailAddress: fields.mailAddress.toLowerCase() },
      undefined,
      { from: newOrigin(), signedMessage },
    );
    expect(again.id).toBe(id);
    expect(await userRow(owner.address)).toEqual(before);
    // The second mail goes to the sign-up's address; its link verifies the sign-up as it was.
    const link = verificationLinkIn(await h.smtp.next(fields.mailAddress, 1));
    expect(await verify(link.email, link.token)).toBe(VERIFIED_MESSAGE);
    expect((await h.users.byAddress(owner.address))?.username).toBe(fields.username);
    await waitFor(() => registered.some((e) => e.userId === Number(id)), 10_000, "auth.user.registered");
    expect(registered.filter((e) => e.userId === Number(id))).toHaveLength(1);
  });

  it("cannot squat an address: `REGISTER: <nonce>` replaces a pending legacy sign-up", async () => {
    const owner = newWallet();
    // The owner's `REGISTER` signature, seen by someone else, who signs the owner's address up first.
    const signedMessage = await owner.signMessage("REGISTER");
    const squat = form({ mailAddress: "squatter@example.org" });
    const squatted = await register(owner, squat, undefined, { from: newOrigin(), signedMessage });
    const squatLink = verificationLinkIn(await h.smtp.next("squatter@example.org"));

    // The owner signs up with a fresh nonce: a new sign-up replaces the squatter's.
    const mine = await registerWithNonce(owner);
    expect(mine.id).not.toBe(squatted.id);
    expect(h.users.requests(UsersRpc.register).at(-1)).toMatchObject({
      address: owner.address,
      proof: "nonce",
    });
    expect(await userRow(owner.address)).toMatchObject({
      id: Number(mine.id),
      username: mine.fields.username,
      proof: "nonce",
    });
    // The squatter's link no longer verifies anything; the owner's does, and the owner signs in.
    expect(await failureOf(verify(squatLink.email, squatLink.token))).toMatchObject({
      kind: "validation",
      code: "VERIFICATION_TOKEN_INVALID",
    });
    const link = verificationLinkIn(await h.smtp.next(mine.fields.mailAddress));
    expect(await verify(link.email, link.token)).toBe(VERIFIED_MESSAGE);
    expect((await verifyToken(h, await legacyLogin(h, owner, origin))).claims.sub).toBe(mine.id);
    // The nonce was consumed: the same `REGISTER: <nonce>` signature does not work twice.
    const replay = await failureOf(
      register(owner, form(), `REGISTER: ${mine.nonce}`, { signedMessage: mine.signedMessage }),
    );
    expect(replay).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
  });

  it("cannot squat an address: a SIWE sign-up replaces a pending legacy one", async () => {
    const owner = newWallet();
    const signedMessage = await owner.signMessage("REGISTER");
    const squatted = await register(owner, form(), undefined, { from: newOrigin(), signedMessage });
    const nonce = await h.client.call(AuthRpc.nonce, { address: owner.address, origin });
    const message = siweMessage(h, owner.address, nonce, { statement: "Create my Fundraise account." });
    const mine = await register(owner, form(), message);
    expect(mine.id).not.toBe(squatted.id);
    expect(await userRow(owner.address)).toMatchObject({ id: Number(mine.id), proof: "nonce" });
  });

  it("a pending nonce-proven sign-up is not replaced: other data 409, same data re-sent", async () => {
    const owner = newWallet();
    const first = await registerWithNonce(owner);
    const before = await userRow(owner.address);
    // Neither a legacy replay nor another nonce-proven sign-up with other data changes it.
    const legacy = await failureOf(register(owner, form(), undefined, { from: newOrigin() }));
    expect(legacy).toMatchObject({ kind: "conflict", code: "USER_ADDRESS_TAKEN" });
    const other = await failureOf(registerWithNonce(owner));
    expect(other).toMatchObject({ kind: "conflict", code: "USER_ADDRESS_TAKEN" });
    expect(await userRow(owner.address)).toEqual(before);
    // The same data again re-sends the link (same id).
    const again = await registerWithNonce(owner, first.fields);
    expect(again.id).toBe(first.id);
    const link = verificationLinkIn(await h.smtp.next(first.fields.mailAddress, 1));
    expect(await verify(link.email, link.token)).toBe(VERIFIED_MESSAGE);
  });

  it("an expired pending sign-up is replaced by anyone, even with a replayed `REGISTER`", async () => {
    const owner = newWallet();
    const first = await registerWithNonce(owner);
    await h.users.sql.query(
      `update users."user" set pending_until = now() - interval '1 minute' where id = $1`,
      [Number(first.id)],
    );
    const later = await register(owner, form(), undefined, { from: newOrigin() });
    expect(later.id).not.toBe(first.id);
    expect(await userRow(owner.address)).toMatchObject({ id: Number(later.id), proof: "legacy" });
  });

  it("`REGISTER: <nonce>` needs a nonce issued for the signing address", async () => {
    const owner = newWallet();
    const unissued = await failureOf(register(owner, form(), "REGISTER: 12345678"));
    expect(unissued).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
    const someoneElses = await h.client.call(AuthRpc.nonce, { address: newWallet().address, origin });
    const foreign = await failureOf(register(owner, form(), `REGISTER: ${someoneElses}`));
    expect(foreign).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
    expect(await userRow(owner.address)).toBeUndefined();
  });
});

describe("register with Sign-In with Ethereum", () => {
  it("takes the address from the message and consumes the issued nonce", async () => {
    const wallet = newWallet();
    const nonce = await h.client.call(AuthRpc.nonce, { address: wallet.address, origin });
    const message = siweMessage(h, wallet.address, nonce, { statement: "Create my Fundraise account." });
    const { id, fields } = await register(wallet, form(), message);
    expect((await h.users.byAddress(wallet.address))?.id).toBe(Number(id));
    expect((await userRow(wallet.address))?.proof).toBe("nonce");
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

  it("refuses a message whose URI is not on PUBLIC_BASE_URL's origin", async () => {
    for (const uri of [
      "javascript://localhost:8080/%0aalert(1)",
      "http://evil@localhost:8080/",
      "ftp://localhost:8080/",
    ]) {
      const wallet = newWallet();
      const nonce = await h.client.call(AuthRpc.nonce, { address: wallet.address, origin });
      const message = siweMessage(h, wallet.address, nonce, { uri });
      expect(await failureOf(register(wallet, form(), message)), uri).toMatchObject({
        kind: "validation",
        message: "The signature or the signed message is not valid.",
      });
    }
  });
});
