import { createHash } from "node:crypto";
import { testMessageContext } from "@fundraise/bus/testing";
import { AuthEvents, ErrorCode } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import { authOnMemory, newOrigin, newWallet, SETTINGS, siweMessage } from "../test/memory-auth.ts";
import {
  LINK_EXPIRED_MESSAGE,
  MAIL_NOT_SENT_MESSAGE,
  REGISTER_SIGNATURE_MESSAGE,
  VERIFIED_MESSAGE,
} from "./sign-up.service.ts";

// Sign-up (rules.md §2, §7) on memory (test/memory-auth.ts): the real signed-message check and service;
// the verification links in an in-memory repository, mail kept in memory, A STAND-IN FOR THE USERS
// SERVICE on the in-memory bus. Postgres, SMTP and the users service itself are the integration suites'
// (rpc/register.int.test.ts).

type Setup = Awaited<ReturnType<typeof authOnMemory>>;
type Wallet = ReturnType<typeof newWallet>;
const ctx = () => testMessageContext();

let forms = 0;
const form = () => {
  forms += 1;
  return {
    name: " Ada ",
    surname: "Lovelace",
    username: `ada_${forms}`,
    mailAddress: `ada.${forms}@example.org`,
  };
};
/** Registers with the constant `REGISTER` text (the existing web client); answers the id and the note. */
async function register(h: Setup, wallet: Wallet, fields = form(), origin = newOrigin()) {
  const answer = await h.signUp.register(
    { ...fields, signedMessage: await wallet.signMessage("REGISTER"), message: null },
    origin,
    ctx(),
  );
  return typeof answer === "string"
    ? { id: answer, note: null, fields }
    : { id: answer.data, note: answer.message, fields };
}
/** The link of the last mail sent to this address: the e-mail and token the gateway's route passes on. */
function lastLink(h: Setup, mailAddress: string) {
  const mail = h.mailer.sent.filter((m) => m.to === mailAddress).at(-1);
  if (!mail) throw new Error(`no mail to ${mailAddress}`);
  const url = new URL(mail.link);
  return {
    url,
    mail,
    email: url.searchParams.get("email") ?? "",
    token: url.searchParams.get("token") ?? "",
  };
}
const eventsNamed = (h: Setup, name: string) =>
  h.verifications.events.filter((e) => e.name === name).map((e) => e.payload);
const invalid = { kind: "validation", code: ErrorCode.VERIFICATION_TOKEN_INVALID };

describe("register and verify", () => {
  it("asks the users service with the recovered address, mails the link, and verifies on the link", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    const { id, note, fields } = await register(h, wallet);
    expect(note).toBeNull();
    const userId = Number(id);

    // The address recovered from the signature, trimmed fields, the proof (`REGISTER`: legacy).
    const asked = h.users.registered.at(-1);
    expect(asked).toMatchObject({
      address: wallet.address,
      name: "Ada",
      username: fields.username,
      proof: "legacy",
    });
    const pendingFor = Date.parse(asked?.pendingUntil ?? "") - Date.now();
    expect(pendingFor).toBeGreaterThan(23 * 3_600_000);
    expect(pendingFor).toBeLessThanOrEqual(24 * 3_600_000);
    expect(eventsNamed(h, AuthEvents.registered.name)).toEqual([{ userId, address: wallet.address }]);

    // The link to the gateway with the e-mail and the token; only the token's SHA-256 is stored.
    const link = lastLink(h, fields.mailAddress);
    expect(`${link.url.origin}${link.url.pathname}`).toBe(
      `${SETTINGS.publicBaseUrl}/Authentication/verify-email`,
    );
    expect(link.email).toBe(fields.mailAddress);
    expect(link.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(link.mail).toMatchObject({ name: "Ada", reason: "register", validHours: 24 });
    const [row] = h.verifications.verifications.values();
    expect(row?.tokenHash).toBe(createHash("sha256").update(link.token).digest("hex"));
    expect(JSON.stringify([...h.verifications.verifications.values()])).not.toContain(link.token);

    // Unverified users cannot sign in; the link verifies, then they can.
    const signIn = async () => {
      const origin = newOrigin();
      const nonce = await h.signIn.issueNonce(wallet.address, origin);
      const signedMessage = await wallet.signMessage(`LOGIN: ${nonce}`);
      return h.signIn.login({ address: wallet.address, signedMessage }, origin, ctx());
    };
    await expect(signIn()).rejects.toMatchObject({ code: ErrorCode.EMAIL_NOT_VERIFIED });
    expect(await h.signUp.verifyEmail(link.email, link.token, ctx())).toBe(VERIFIED_MESSAGE);
    expect(eventsNamed(h, AuthEvents.verified.name)).toEqual([{ userId, address: wallet.address }]);
    expect(await h.claimsOf(await signIn())).toMatchObject({ sub: id, unique_name: fields.username });
  });

  it("answers 200 again for a link followed twice (any case of the e-mail), verifying once", async () => {
    const h = await authOnMemory();
    const { fields } = await register(h, newWallet());
    const link = lastLink(h, fields.mailAddress);
    expect(await h.signUp.verifyEmail(link.email, link.token, ctx())).toBe(VERIFIED_MESSAGE);
    expect(await h.signUp.verifyEmail(link.email.toUpperCase(), ` ${link.token} `, ctx())).toBe(
      VERIFIED_MESSAGE,
    );
    expect(eventsNamed(h, AuthEvents.verified.name)).toHaveLength(1);
  });

  it("refuses a wrong token or another e-mail with 400 and changes nothing; the right link still works", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    const { fields } = await register(h, wallet);
    const link = lastLink(h, fields.mailAddress);
    const wrongToken = `${link.token.slice(0, -1)}${link.token.endsWith("A") ? "B" : "A"}`;
    await expect(h.signUp.verifyEmail(link.email, wrongToken, ctx())).rejects.toMatchObject(invalid);
    await expect(h.signUp.verifyEmail("someone.else@example.org", link.token, ctx())).rejects.toMatchObject(
      invalid,
    );
    await expect(h.signUp.verifyEmail(link.email, "short", ctx())).rejects.toMatchObject(invalid);
    await expect(h.signUp.verifyEmail("", link.token, ctx())).rejects.toMatchObject(invalid);
    expect(h.users.accounts.get(wallet.address.toLowerCase())?.isVerified).toBe(false);
    expect(eventsNamed(h, AuthEvents.verified.name)).toEqual([]);
    expect(await h.signUp.verifyEmail(link.email, link.token, ctx())).toBe(VERIFIED_MESSAGE);
  });

  it("answers 410 for an expired link, and the user stays unverified", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    const { fields } = await register(h, wallet);
    const link = lastLink(h, fields.mailAddress);
    await h.verifications.transaction(async () => undefined);
    for (const row of h.verifications.verifications.values()) row.expiresAt = new Date(Date.now() - 60_000);
    await expect(h.signUp.verifyEmail(link.email, link.token, ctx())).rejects.toMatchObject({
      kind: "gone",
      code: ErrorCode.VERIFICATION_LINK_EXPIRED,
      message: LINK_EXPIRED_MESSAGE,
    });
    expect(h.users.accounts.get(wallet.address.toLowerCase())?.isVerified).toBe(false);
  });

  it("a link of a sign-up the users service no longer has (replaced or deleted) is not valid", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    const { fields } = await register(h, wallet);
    const link = lastLink(h, fields.mailAddress);
    h.users.accounts.delete(wallet.address.toLowerCase());
    await expect(h.signUp.verifyEmail(link.email, link.token, ctx())).rejects.toMatchObject(invalid);
    expect(eventsNamed(h, AuthEvents.verified.name)).toEqual([]);
  });

  it("keeps the user when the mail cannot be sent, says so, and re-sends when registering again", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    const fields = form();
    h.mailer.failing = true;
    const first = await register(h, wallet, fields);
    h.mailer.failing = false;
    // The answer says so (rules.md §2.9), in the envelope's message.
    expect(first.note).toBe(MAIL_NOT_SENT_MESSAGE);
    const [lost] = h.verifications.verifications.values();

    // The same data again: the users service answers the pending sign-up (`resent`).
    const again = await register(h, wallet, fields);
    expect(again).toMatchObject({ id: first.id, note: null });
    const rows = [...h.verifications.verifications.values()];
    expect(rows).toHaveLength(1);
    // The re-sent link replaces the lost one and keeps the sign-up's deadline.
    expect(rows[0]?.tokenHash).not.toBe(lost?.tokenHash);
    expect(rows[0]?.expiresAt.getTime()).toBe(lost?.expiresAt.getTime());
    const link = lastLink(h, fields.mailAddress);
    expect(await h.signUp.verifyEmail(link.email, link.token, ctx())).toBe(VERIFIED_MESSAGE);
    // Re-sending is not a new registration: one auth.user.registered event.
    expect(eventsNamed(h, AuthEvents.registered.name)).toHaveLength(1);
  });

  it("passes the users service's 409 through and mails nothing", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    h.users.seed(wallet.address);
    await expect(register(h, wallet)).rejects.toMatchObject({
      kind: "conflict",
      code: ErrorCode.USER_ADDRESS_TAKEN,
    });
    expect(h.mailer.sent).toEqual([]);
    expect(h.verifications.verifications.size).toBe(0);
  });

  it("refuses bad input with 400 naming every bad field, before asking anyone", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    await expect(
      register(h, wallet, {
        name: "",
        surname: "Love\u202Elace",
        username: "ada",
        mailAddress: "not-an-email",
      }),
    ).rejects.toMatchObject({
      kind: "validation",
      code: ErrorCode.VALIDATION_FAILED,
      details: expect.arrayContaining([
        expect.objectContaining({ path: "/name" }),
        expect.objectContaining({ path: "/surname" }),
        expect.objectContaining({ path: "/mailAddress" }),
      ]),
    });
    expect(h.users.registered).toEqual([]);
  });

  it("limits sign-ups per client IP and address (429), never per address alone", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    const origin = newOrigin();
    const fields = form();
    for (let i = 0; i < SETTINGS.limits.registerPerIpAddressPerHour; i++)
      await register(h, wallet, fields, origin);
    await expect(register(h, wallet, fields, origin)).rejects.toMatchObject({ code: ErrorCode.RATE_LIMITED });
    expect(await register(h, wallet, fields, newOrigin())).toMatchObject({ note: null });
  });
});

describe("register with a nonce", () => {
  it("SIWE: the address from the message, the issued nonce consumed, proof `nonce`", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    const origin = newOrigin();
    const nonce = await h.signIn.issueNonce(wallet.address, origin);
    const message = siweMessage(wallet.address, nonce);
    await h.signUp.register(
      { ...form(), signedMessage: await wallet.signMessage(message), message },
      origin,
      ctx(),
    );
    expect(h.users.registered.at(-1)).toMatchObject({ address: wallet.address, proof: "nonce" });
    expect(h.nonces.outstanding(wallet.address)).toEqual([]);
  });

  it("`REGISTER: <nonce>` needs a nonce issued for the signing address; refused, nothing is asked", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    const origin = newOrigin();
    const othersNonce = await h.signIn.issueNonce(newWallet().address, origin);
    const message = `REGISTER: ${othersNonce}`;
    await expect(
      h.signUp.register(
        { ...form(), signedMessage: await wallet.signMessage(message), message },
        origin,
        ctx(),
      ),
    ).rejects.toMatchObject({ kind: "validation", message: REGISTER_SIGNATURE_MESSAGE });
    expect(h.users.registered).toEqual([]);
    const own = await h.signIn.issueNonce(wallet.address, origin);
    const ownMessage = `REGISTER: ${own}`;
    await h.signUp.register(
      { ...form(), signedMessage: await wallet.signMessage(ownMessage), message: ownMessage },
      origin,
      ctx(),
    );
    expect(h.users.registered.at(-1)).toMatchObject({ address: wallet.address, proof: "nonce" });
  });
});

describe("the users service's events", () => {
  it("a changed e-mail address gets a new link, once per message; older unused links stop working", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    const { id, fields } = await register(h, wallet);
    const old = lastLink(h, fields.mailAddress);
    const claim = { consumer: "auth", messageKey: "m-1" };
    const user = { userId: Number(id), mailAddress: "ada.new@example.org" };
    expect(await h.signUp.verifyNewAddress(user, claim)).toBe(true);
    expect(await h.signUp.verifyNewAddress(user, claim)).toBe(false);
    expect(h.mailer.sent.filter((m) => m.to === user.mailAddress)).toMatchObject([
      { reason: "email-changed" },
    ]);
    await expect(h.signUp.verifyEmail(old.email, old.token, ctx())).rejects.toMatchObject(invalid);
  });

  it("a mail that cannot be sent rolls the link and the claim back: the redelivery sends it", async () => {
    const h = await authOnMemory();
    const claim = { consumer: "auth", messageKey: "m-2" };
    const user = { userId: 42, mailAddress: "grace@example.org" };
    h.mailer.failing = true;
    await expect(h.signUp.verifyNewAddress(user, claim)).rejects.toThrow();
    expect(h.verifications.verifications.size).toBe(0);
    h.mailer.failing = false;
    expect(await h.signUp.verifyNewAddress(user, claim)).toBe(true);
    expect(h.mailer.sent).toHaveLength(1);
    expect(h.verifications.verifications.size).toBe(1);
  });

  it("a deleted user's links go, once per message; links long expired are pruned", async () => {
    const h = await authOnMemory();
    const gone = await register(h, newWallet());
    const kept = await register(h, newWallet());
    const claim = { consumer: "auth", messageKey: "m-3" };
    expect(await h.signUp.forgetUser(Number(gone.id), claim)).toBe(true);
    expect(await h.signUp.forgetUser(Number(gone.id), claim)).toBe(false);
    expect([...h.verifications.verifications.values()].map((r) => r.userId)).toEqual([Number(kept.id)]);
    expect(await h.signUp.pruneExpired(new Date())).toBe(0);
    expect(await h.signUp.pruneExpired(new Date(Date.now() + 25 * 3_600_000))).toBe(1);
    expect(h.verifications.verifications.size).toBe(0);
  });
});
