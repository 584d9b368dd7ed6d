import { randomUUID } from "node:crypto";
import { testMessageContext, waitFor } from "@fundraise/bus/testing";
import { AuthRpc, UsersEvents, UsersRpc } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { VERIFIED_MESSAGE } from "../sign-up/sign-up.service.ts";
import {
  failureOf,
  type Harness,
  legacyLogin,
  newWallet,
  startHarness,
  verifyToken,
} from "../test/harness.ts";
import { verificationLinkIn } from "../test/smtp.ts";

// Signing keys, the JWKS and the session hash the gateway reads, on the real servers, with the real users
// service. Some users events are published here on the real bus as the users service publishes them.
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

const sessionKey = (userId: number) => `${h.prefix}session:${userId}`;

async function signedInUser() {
  const wallet = newWallet();
  const user = await h.users.seed({ address: wallet.address });
  const token = await legacyLogin(h, wallet);
  return { wallet, user, token };
}

describe("signing keys and JWKS", () => {
  it("serves the signing key's public half with its kid (ES256, no private part)", async () => {
    const { token } = await signedInUser();
    const { kid } = await verifyToken(h, token);
    const jwks = await h.client.call(AuthRpc.jwks, {});
    const key = jwks.keys.find((k) => k.kid === kid);
    expect(key).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
    for (const k of jwks.keys) expect(k).not.toHaveProperty("d");
    const { rows } = await h.sql.query(
      "select kid, private_jwk is not null as has_private from auth.signing_key",
    );
    expect(rows).toContainEqual({ kid, has_private: true });
  });

  it("rotates without logging anybody out: old tokens verify until they expire", async () => {
    const before = await signedInUser();
    const oldKid = (await verifyToken(h, before.token)).kid;
    const newKid = await h.app.keys.rotate();
    expect(newKid).not.toBe(oldKid);

    const after = await legacyLogin(h, before.wallet);
    expect((await verifyToken(h, after)).kid).toBe(newKid);
    expect((await verifyToken(h, before.token)).kid).toBe(oldKid);
    const kids = (await h.client.call(AuthRpc.jwks, {})).keys.map((k) => k.kid);
    expect(kids).toEqual(expect.arrayContaining([oldKid, newKid]));
    // The retired key keeps only its public half.
    const { rows } = await h.sql.query("select private_jwk from auth.signing_key where kid = $1", [oldKid]);
    expect(rows[0]?.private_jwk).toBeNull();

    // Once every token it signed has expired (TTL 2 h, plus cache and margin), it leaves the JWKS.
    await h.sql.query("update auth.signing_key set retired_at = now() - interval '3 hours' where kid = $1", [
      oldKid,
    ]);
    const later = (await h.client.call(AuthRpc.jwks, {})).keys.map((k) => k.kid);
    expect(later).not.toContain(oldKid);
    await expect(verifyToken(h, before.token)).rejects.toThrow();
  });

  it("creates a new key when the newest is older than the rotation period", async () => {
    const { token } = await signedInUser();
    const current = (await verifyToken(h, token)).kid;
    await h.app.keys.ensureCurrent();
    expect((await h.app.keys.signingKey()).kid).toBe(current);
    await h.sql.query("update auth.signing_key set created_at = now() - interval '31 days' where kid = $1", [
      current,
    ]);
    await h.app.keys.ensureCurrent();
    const next = (await h.app.keys.signingKey()).kid;
    expect(next).not.toBe(current);
    // Tokens of the replaced key still verify.
    expect((await verifyToken(h, token)).kid).toBe(current);
  });
});

describe("session hash from the users service's changes", () => {
  it("auth.session.apply: the session holds the change when it answers, and refuses older tokens", async () => {
    const { wallet, user, token } = await signedInUser();
    const { claims } = await verifyToken(h, token);
    const version = Number(claims.sv) + 1;
    const state = await h.client.call(AuthRpc.applySession, {
      userId: user.id,
      address: wallet.address,
      version,
      role: "Blacklist",
      revoke: true,
      deleted: false,
    });
    expect(state).toEqual({ role: "Blacklist", version, revokedBelow: version, deleted: false });
    // No waiting: the hash already says so, and the token (issued at the older version) is below it.
    expect(await h.redis.hgetall(sessionKey(user.id))).toMatchObject({
      role: "Blacklist",
      version: String(version),
      revokedBelow: String(version),
    });
    expect(Number(claims.sv)).toBeLessThan(version);
  });

  it("users.user.deleted: the session is marked deleted and the role dropped", async () => {
    const { wallet, user } = await signedInUser();
    expect(await h.redis.hget(sessionKey(user.id), "role")).toBe("Base");
    await h.client.publish(UsersEvents.deleted, { userId: user.id, address: wallet.address, version: 2 });
    await waitFor(
      async () => (await h.redis.hget(sessionKey(user.id), "deleted")) === "1",
      10_000,
      "deletion",
    );
    const session = await h.redis.hgetall(sessionKey(user.id));
    expect(session.role).toBeUndefined();
    expect(await h.redis.ttl(sessionKey(user.id))).toBeGreaterThan(7200);
  });

  it("users.user.role-changed by the chain: the role follows, tokens stay valid", async () => {
    const { wallet, user, token } = await signedInUser();
    const { claims } = await verifyToken(h, token);
    await h.client.publish(UsersEvents.roleChanged, {
      userId: user.id,
      address: wallet.address,
      role: "Viewer",
      previousRole: "Base",
      changedBy: "chain",
      version: Number(claims.sv) + 1,
    });
    await waitFor(async () => (await h.redis.hget(sessionKey(user.id), "role")) === "Viewer", 10_000, "role");
    expect(Number(await h.redis.hget(sessionKey(user.id), "revokedBelow"))).toBeLessThanOrEqual(
      Number(claims.sv),
    );
  });

  it("users.user.role-changed by an admin: the role follows and older tokens are revoked", async () => {
    const { wallet, user, token } = await signedInUser();
    const { claims } = await verifyToken(h, token);
    await h.client.publish(UsersEvents.roleChanged, {
      userId: user.id,
      address: wallet.address,
      role: "Whitelist",
      previousRole: "Base",
      changedBy: "7",
      version: Number(claims.sv) + 1,
    });
    await waitFor(
      async () => (await h.redis.hget(sessionKey(user.id), "role")) === "Whitelist",
      10_000,
      "role",
    );
    expect(Number(await h.redis.hget(sessionKey(user.id), "revokedBelow"))).toBeGreaterThan(
      Number(claims.sv),
    );
  });

  it("a late event does not undo a newer change that already reached the session", async () => {
    const { wallet, user, token } = await signedInUser();
    const { claims } = await verifyToken(h, token);
    const base = Number(claims.sv);
    const change = { userId: user.id, address: wallet.address, revoke: true, deleted: false };
    await h.client.call(AuthRpc.applySession, { ...change, version: base + 2, role: "Viewer" });
    await h.app.accounts.roleChanged(
      { ...change, role: "Blacklist", previousRole: "Base", changedBy: "7", version: base + 1 },
      testMessageContext(),
    );
    expect(await h.redis.hget(sessionKey(user.id), "role")).toBe("Viewer");
  });

  it("users.user.email-changed: the new address gets a link that verifies it", async () => {
    const { wallet, user } = await signedInUser();
    const mailAddress = `new.${user.id}@example.org`;
    // The user changes the e-mail: the users service marks it unverified and publishes the event.
    await h.client.call(UsersRpc.update, {
      caller: { userId: user.id, username: user.username, address: wallet.address, role: user.role },
      user: { mailAddress },
    });
    expect(await h.users.byAddress(wallet.address)).toMatchObject({ mailAddress, isVerified: false });
    const mail = await h.smtp.next(mailAddress);
    expect(mail.subject).toBe("Verify your new e-mail address");
    const link = verificationLinkIn(mail);
    expect(await h.client.call(AuthRpc.verifyEmail, { email: link.email, token: link.token })).toBe(
      VERIFIED_MESSAGE,
    );
    expect(h.users.requests(UsersRpc.markVerified)).toContainEqual({ userId: user.id, mailAddress });
    expect(await h.users.byAddress(wallet.address)).toMatchObject({ mailAddress, isVerified: true });
  });

  it("handles a redelivered event once (auth.processed_message)", async () => {
    const { wallet, user } = await signedInUser();
    const mailAddress = `twice.${user.id}@example.org`;
    const ctx = testMessageContext();
    const payload = { userId: user.id, address: wallet.address, mailAddress };
    await h.app.accounts.emailChanged(payload, ctx);
    await h.app.accounts.emailChanged(payload, { ...ctx, attempt: 2 });
    const first = verificationLinkIn(await h.smtp.next(mailAddress));
    expect(h.smtp.received.filter((m) => m.to.includes(mailAddress))).toHaveLength(1);
    const { rows } = await h.sql.query(
      "select count(*)::int as n from auth.email_verification where user_id = $1",
      [user.id],
    );
    expect(rows[0]?.n).toBe(1);
    // A new message id is a new change: a new mail, and the earlier link stops working.
    await h.app.accounts.emailChanged(payload, { ...ctx, messageId: randomUUID() });
    await h.smtp.next(mailAddress, 1);
    const failure = await failureOf(
      h.client.call(AuthRpc.verifyEmail, { email: first.email, token: first.token }),
    );
    expect(failure.code).toBe("VERIFICATION_TOKEN_INVALID");
  });
});
