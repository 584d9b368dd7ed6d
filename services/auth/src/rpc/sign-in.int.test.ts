import { testMessageContext, waitFor } from "@fundraise/bus/testing";
import { registryAt, UserStatus, waitForReceipt } from "@fundraise/contracts";
import { AuthRpc, UsersRpc } from "@fundraise/protocol";
import type { Wallet } from "ethers";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createAccountCopy } from "../sign-in/account-copy.ts";
import { LOGIN_FAILED_MESSAGE } from "../sign-in/sign-in.service.ts";
import { deployContractWallet } from "../test/contract-wallet.ts";
import {
  failureOf,
  type Harness,
  legacyLogin,
  newOrigin,
  newWallet,
  siweMessage,
  startHarness,
  verifyToken,
} from "../test/harness.ts";

// Sign-in on the real servers: Postgres, RabbitMQ, Redis, anvil with the platform deployed, and the real
// users service beside the auth service.
let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    NONCES_PER_ADDRESS: "3",
    NONCE_PER_IP_PER_MINUTE: "20",
    NONCE_PER_IP_ADDRESS_PER_MINUTE: "5",
    LOGIN_FAILURES_PER_IP_PER_MINUTE: "8",
    LOGIN_FAILURES_PER_IP_ADDRESS_PER_MINUTE: "5",
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

const nonceKey = (address: string) => `${h.prefix}nonce:${address.toLowerCase()}`;
/** The outstanding nonces of an address as stored: `<nonce>|<client ip>`. */
const storedNonces = (address: string) => h.redis.zrange(nonceKey(address), 0, -1);
const getNonce = (address: string, from = origin) => h.client.call(AuthRpc.nonce, { address, origin: from });
const login = (
  address: string | null,
  signedMessage: string | null,
  message?: string | null,
  from = origin,
) =>
  h.client.call(AuthRpc.login, {
    login: { address, signedMessage, ...(message === undefined ? {} : { message }) },
    origin: from,
  });
const loginFailed = { kind: "unauthenticated", code: "LOGIN_FAILED", message: LOGIN_FAILED_MESSAGE };
const outcome = (call: Promise<unknown>) =>
  call.then(
    () => "ok",
    (e: { code: string }) => e.code,
  );

async function setChainStatus(address: string, status: number) {
  const registry = registryAt(h.chain.deployment.registry, h.chain.signers[0]);
  const sent = await registry.editUserStatus(address, status);
  await waitForReceipt(h.chain.provider, sent.hash);
}

/** A verified user of the users service with this wallet. */
const signedUp = (wallet: Wallet, fields: Parameters<Harness["users"]["seed"]>[0] | object = {}) =>
  h.users.seed({ address: wallet.address, ...fields });

describe("GetNonce", () => {
  it("issues a non-negative 32-bit nonce, stored per address with the nonce lifetime", async () => {
    const wallet = newWallet();
    const before = Date.now();
    const nonce = await getNonce(wallet.address.toLowerCase());
    expect(Number.isInteger(nonce)).toBe(true);
    expect(nonce).toBeGreaterThanOrEqual(0);
    expect(nonce).toBeLessThan(2 ** 31);
    const stored = await h.redis.zrange(nonceKey(wallet.address), 0, -1, "WITHSCORES");
    expect(stored[0]).toBe(`${nonce}|${origin.ip}`);
    // The score is the nonce's expiry: five minutes after it was issued.
    expect(Number(stored[1]) - before).toBeGreaterThanOrEqual(300_000);
    expect(Number(stored[1]) - Date.now()).toBeLessThanOrEqual(300_000);
    const ttl = await h.redis.ttl(nonceKey(wallet.address));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(300);
  });

  it("answers the same way for registered and unknown addresses", async () => {
    const known = newWallet();
    await signedUp(known);
    const lookups = h.users.requests(UsersRpc.byAddress).length;
    const a = await getNonce(known.address);
    const b = await getNonce(newWallet().address);
    expect(typeof a).toBe(typeof b);
    // The users service is not asked: whether the address is registered is never looked at.
    expect(h.users.requests(UsersRpc.byAddress)).toHaveLength(lookups);
  });

  it("keeps earlier nonces: each outstanding one signs in once, in any order", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    const first = await getNonce(wallet.address);
    const second = await getNonce(wallet.address);
    const firstSignature = await wallet.signMessage(`LOGIN: ${first}`);
    expect(await login(wallet.address, firstSignature)).toMatch(/^ey/);
    expect(await storedNonces(wallet.address)).toEqual([`${second}|${origin.ip}`]);
    expect(await login(wallet.address, await wallet.signMessage(`LOGIN: ${second}`))).toMatch(/^ey/);
    expect(await failureOf(login(wallet.address, firstSignature))).toEqual(loginFailed);
  });

  it("bounds the outstanding nonces per address, dropping the requesting IP's oldest first", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    const owner = origin;
    const mine = await getNonce(wallet.address, owner);
    // Someone else asks for nonces of the address, more than the bound (3): only their own are dropped.
    const other = newOrigin();
    for (let i = 0; i < 5; i++) await getNonce(wallet.address, other);
    const stored = await storedNonces(wallet.address);
    expect(stored).toHaveLength(3);
    expect(stored).toContain(`${mine}|${owner.ip}`);
    expect(await login(wallet.address, await wallet.signMessage(`LOGIN: ${mine}`), undefined, owner)).toMatch(
      /^ey/,
    );

    // The owner's next request, with the bound reached by the other IP's nonces: the oldest of those goes.
    const next = await getNonce(wallet.address, owner);
    expect(await storedNonces(wallet.address)).toContain(`${next}|${owner.ip}`);
    expect(await storedNonces(wallet.address)).toHaveLength(3);
  });

  it("drops an IP's own oldest nonce when that IP asks for more than the bound", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    const [a, b, c, d] = [
      await getNonce(wallet.address),
      await getNonce(wallet.address),
      await getNonce(wallet.address),
      await getNonce(wallet.address),
    ];
    expect((await storedNonces(wallet.address)).sort()).toEqual(
      [b, c, d].map((n) => `${n}|${origin.ip}`).sort(),
    );
    expect(await failureOf(login(wallet.address, await wallet.signMessage(`LOGIN: ${a}`)))).toEqual(
      loginFailed,
    );
    expect(await login(wallet.address, await wallet.signMessage(`LOGIN: ${b}`))).toMatch(/^ey/);
  });

  it("refuses a malformed address with 400 and writes nothing", async () => {
    // Every key but the account copy's, which the events of earlier tests' sign-ups still change meanwhile.
    const keys = async () =>
      (await h.redis.keys(`${h.prefix}*`)).filter((k) => !k.startsWith(`${h.prefix}account`)).sort();
    const before = await keys();
    for (const address of ["0x123", "not-an-address", "0x5B38Da6a701c568545dCfcB03FcB875f56beddc4"]) {
      const failure = await failureOf(getNonce(address));
      expect(failure).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
      expect(failure.message).toContain("address");
    }
    expect(await keys()).toEqual(before);
  });

  it("limits nonces per client IP and address (429), never per address alone", async () => {
    const wallet = newWallet();
    const outcomes: string[] = [];
    const answered: number[] = [];
    // 2 × limit + 1 calls: whichever way a minute boundary splits them, one window sees more than 5.
    for (let i = 0; i < 11; i++) {
      outcomes.push(await outcome(getNonce(wallet.address).then((n) => answered.push(n))));
    }
    expect(outcomes.slice(0, 5)).toEqual(["ok", "ok", "ok", "ok", "ok"]);
    expect(outcomes).toContain("RATE_LIMITED");
    expect(outcomes.filter((o) => o !== "ok" && o !== "RATE_LIMITED")).toEqual([]);
    // A refused call issued nothing and displaced nothing: the live nonces are the last three answered
    // (NONCES_PER_ADDRESS is 3 here).
    const live = await h.redis.zrange(nonceKey(wallet.address), 0, -1);
    expect(live.map((m) => Number(m.split("|")[0])).sort()).toEqual(answered.slice(-3).sort());
    // Another client still gets nonces for the address.
    expect(await getNonce(wallet.address, newOrigin())).toBeGreaterThan(0);
  });

  it("limits nonces per client IP across addresses (429)", async () => {
    const outcomes: string[] = [];
    for (let i = 0; i < 41; i++) outcomes.push(await outcome(getNonce(newWallet().address)));
    expect(outcomes.slice(0, 20)).toEqual(Array(20).fill("ok"));
    expect(outcomes).toContain("RATE_LIMITED");
    expect(await getNonce(newWallet().address, newOrigin())).toBeGreaterThan(0);
  });
});

describe("legacy login", () => {
  it("signs `LOGIN: <nonce>` in and issues a token with every claim", async () => {
    const wallet = newWallet();
    const username = `ada_${Date.now().toString(36)}`;
    const user = await signedUp(wallet, { username, surname: "Lovelace" });
    const token = await legacyLogin(h, wallet, origin);
    const { claims, kid } = await verifyToken(h, token);
    expect(kid).not.toBe("");
    expect(claims).toMatchObject({
      sub: String(user.id),
      nameid: String(user.id),
      unique_name: username,
      role: "Base",
      // The wallet address, as rules.md §2.13 and the first backend have it (not the surname).
      family_name: wallet.address,
      address: wallet.address,
      iss: "fundraise-auth",
      aud: "fundraise",
    });
    expect(claims.exp - claims.iat).toBe(7200);
    expect(claims.jti).toMatch(/^[0-9a-f-]{36}$/);
    // The session hash the gateway reads: the current role, with a lifetime that covers the token.
    expect(await h.redis.hget(`${h.prefix}session:${user.id}`, "role")).toBe("Base");
    expect(await h.redis.ttl(`${h.prefix}session:${user.id}`)).toBeGreaterThan(7200);
  });

  it("accepts the text in `message` too, and consumes the nonce: the same signature replayed is refused", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    const nonce = await getNonce(wallet.address);
    const signature = await wallet.signMessage(`LOGIN: ${nonce}`);
    expect(await login(wallet.address, signature, `LOGIN: ${nonce}`)).toMatch(/^ey/);
    expect(await h.redis.exists(nonceKey(wallet.address))).toBe(0);
    expect(await failureOf(login(wallet.address, signature))).toEqual(loginFailed);
    expect(await failureOf(login(wallet.address, signature, `LOGIN: ${nonce}`))).toEqual(loginFailed);
  });

  it("a signature by another key consumes nothing: the owner still signs in with the nonce", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    const nonce = await getNonce(wallet.address);
    const forged = await newWallet().signMessage(`LOGIN: ${nonce}`);
    expect(await failureOf(login(wallet.address, forged))).toEqual(loginFailed);
    expect(await storedNonces(wallet.address)).toEqual([`${nonce}|${origin.ip}`]);
    expect(await login(wallet.address, await wallet.signMessage(`LOGIN: ${nonce}`))).toMatch(/^ey/);
  });

  it("an attempt that names the nonce (`message`) consumes it whatever its outcome", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    const nonce = await getNonce(wallet.address);
    const forged = await newWallet().signMessage(`LOGIN: ${nonce}`);
    expect(await failureOf(login(wallet.address, forged, `LOGIN: ${nonce}`))).toEqual(loginFailed);
    expect(await h.redis.exists(nonceKey(wallet.address))).toBe(0);
    expect(await failureOf(login(wallet.address, await wallet.signMessage(`LOGIN: ${nonce}`)))).toEqual(
      loginFailed,
    );
  });

  it("a correctly signed attempt that fails later (unknown address) consumes its nonce", async () => {
    const stranger = newWallet();
    const nonce = await getNonce(stranger.address);
    const signature = await stranger.signMessage(`LOGIN: ${nonce}`);
    expect(await failureOf(login(stranger.address, signature))).toEqual(loginFailed);
    expect(await h.redis.exists(nonceKey(stranger.address))).toBe(0);
  });

  it("answers every failure with one 401 that does not say which part failed", async () => {
    const known = newWallet();
    await signedUp(known);
    // Unknown address, correctly signed.
    const stranger = newWallet();
    const n1 = await getNonce(stranger.address);
    const unknown = await failureOf(login(stranger.address, await stranger.signMessage(`LOGIN: ${n1}`)));
    // No nonce ever issued.
    const missing = await failureOf(login(known.address, await known.signMessage("LOGIN: 12345678")));
    // An expired nonce (Redis dropped it).
    const n2 = await getNonce(known.address);
    await h.redis.del(nonceKey(known.address));
    const expired = await failureOf(login(known.address, await known.signMessage(`LOGIN: ${n2}`)));
    // The signature of another address.
    const n3 = await getNonce(known.address);
    const otherSigner = await failureOf(login(known.address, await stranger.signMessage(`LOGIN: ${n3}`)));
    // The right key over the wrong nonce, without and with the text.
    const n4 = await getNonce(known.address);
    const wrongNonce = await failureOf(login(known.address, await known.signMessage(`LOGIN: ${n4 + 1}`)));
    const wrongText = await failureOf(
      login(known.address, await known.signMessage(`LOGIN: ${n4 + 1}`), `LOGIN: ${n4 + 1}`),
    );
    for (const failure of [unknown, missing, expired, otherSigner, wrongNonce, wrongText])
      expect(failure).toEqual(loginFailed);
  });

  it("refuses an unverified user with 403 after a valid signature", async () => {
    const wallet = newWallet();
    await signedUp(wallet, { isVerified: false });
    const failure = await failureOf(legacyLogin(h, wallet, origin));
    expect(failure).toEqual({
      kind: "forbidden",
      code: "EMAIL_NOT_VERIFIED",
      message: "Verify your e-mail first.",
    });
  });

  it("refuses malformed input with 400 and leaves the nonce in place", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    const nonce = await getNonce(wallet.address);
    const signature = await wallet.signMessage(`LOGIN: ${nonce}`);
    const badAddress = await failureOf(login("0x1234", signature));
    const noSignature = await failureOf(login(wallet.address, null));
    const notHex = await failureOf(login(wallet.address, "signed!"));
    for (const [failure, field] of [
      [badAddress, "address"],
      [noSignature, "signedMessage"],
      [notHex, "signedMessage"],
    ] as const) {
      expect(failure).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
      expect(failure.message).toContain(field);
    }
    expect(await storedNonces(wallet.address)).toEqual([`${nonce}|${origin.ip}`]);
    expect(await login(wallet.address, signature)).toMatch(/^ey/);
  });

  it("limits failed attempts per client IP and address (429); successful ones do not count", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    // Seven sign-ins in a row from one IP, more than the limit of failures (5): all succeed. (Their nonces
    // come from other IPs, as GetNonce has its own limit; a nonce is for the address, from wherever.)
    for (let i = 0; i < 7; i++) {
      const nonce = await getNonce(wallet.address, newOrigin());
      expect(await login(wallet.address, await wallet.signMessage(`LOGIN: ${nonce}`))).toMatch(/^ey/);
    }
    const outcomes: string[] = [];
    for (let i = 0; i < 11; i++) {
      outcomes.push(await outcome(login(wallet.address, await wallet.signMessage("LOGIN: 12345678"))));
    }
    expect(outcomes.slice(0, 5)).toEqual(Array(5).fill("LOGIN_FAILED"));
    expect(outcomes).toContain("RATE_LIMITED");
    expect(outcomes.filter((o) => o !== "LOGIN_FAILED" && o !== "RATE_LIMITED")).toEqual([]);
  });

  it("limits failed attempts per client IP across addresses (429)", async () => {
    const outcomes: string[] = [];
    for (let i = 0; i < 17; i++) {
      const wallet = newWallet();
      outcomes.push(await outcome(login(wallet.address, await wallet.signMessage("LOGIN: 12345678"))));
    }
    expect(outcomes.slice(0, 8)).toEqual(Array(8).fill("LOGIN_FAILED"));
    expect(outcomes).toContain("RATE_LIMITED");
  });

  it("nobody can lock a user out: another client's failures and nonces leave the user's sign-in working", async () => {
    const victim = newWallet();
    await signedUp(victim);
    const attacker = newOrigin();
    const attempts: string[] = [];
    for (let i = 0; i < 12; i++) {
      // Failed logins for the victim's address from the attacker's IP, with and without a text …
      const text = `LOGIN: ${10_000_000 + i}`;
      const forged = await newWallet().signMessage(text);
      attempts.push(await outcome(login(victim.address, forged, i % 2 === 0 ? undefined : text, attacker)));
      // … and nonces requested for it, to push the victim's out.
      attempts.push(await outcome(getNonce(victim.address, attacker)));
    }
    expect(attempts).toContain("RATE_LIMITED");
    // The victim, from another IP: GetNonce, sign, Login → a token.
    const token = await legacyLogin(h, victim, origin);
    expect((await verifyToken(h, token)).claims.address).toBe(victim.address);
    // Even a nonce the victim got before the attacker's requests still works.
    const early = await getNonce(victim.address);
    for (let i = 0; i < 5; i++) await outcome(getNonce(victim.address, attacker));
    await outcome(
      login(victim.address, await newWallet().signMessage(`LOGIN: ${early}`), undefined, attacker),
    );
    expect(await login(victim.address, await victim.signMessage(`LOGIN: ${early}`))).toMatch(/^ey/);
  });
});

describe("chain role at login", () => {
  it("reads the role from the registry before issuing the token and stores it", async () => {
    const wallet = newWallet();
    const user = await signedUp(wallet);
    await setChainStatus(wallet.address, UserStatus.Whitelisted);
    const { claims } = await verifyToken(h, await legacyLogin(h, wallet, origin));
    expect(claims.role).toBe("Whitelist");
    expect(h.users.requests(UsersRpc.setChainRole)).toContainEqual({
      address: wallet.address,
      role: "Whitelist",
    });
    expect((await h.users.byAddress(wallet.address))?.role).toBe("Whitelist");
    expect(await h.redis.hget(`${h.prefix}session:${user.id}`, "role")).toBe("Whitelist");
  });

  it("leaves the role alone when the chain agrees", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    const token = await legacyLogin(h, wallet, origin);
    expect((await verifyToken(h, token)).claims.role).toBe("Base");
    expect((await h.users.byAddress(wallet.address))?.role).toBe("Base");
    // Once the users service knows what the chain says, a sign-in does not tell it again.
    const asked = () =>
      h.users.requests(UsersRpc.setChainRole).filter((r) => r.address === wallet.address).length;
    const before = asked();
    await legacyLogin(h, wallet, origin);
    expect(asked()).toBe(before);
  });

  it("gives the chain's Admin role to a registry admin", async () => {
    const admin = h.chain.signers[0];
    if (!admin) throw new Error("no deployer");
    await h.users.seed({ address: admin.address });
    const nonce = await getNonce(admin.address);
    const token = await login(admin.address, await admin.signMessage(`LOGIN: ${nonce}`));
    expect((await verifyToken(h, token)).claims.role).toBe("Admin");
  });

  it("lets a blacklisted user sign in, as Blacklist", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    await setChainStatus(wallet.address, UserStatus.Blacklisted);
    expect((await verifyToken(h, await legacyLogin(h, wallet, origin))).claims.role).toBe("Blacklist");
  });
});

describe("Sign-In with Ethereum (EIP-4361)", () => {
  it("signs in with a full SIWE message, the address taken from the request or the message", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    const n1 = await getNonce(wallet.address);
    const m1 = siweMessage(h, wallet.address, n1);
    expect(await login(wallet.address, await wallet.signMessage(m1), m1)).toMatch(/^ey/);
    const n2 = await getNonce(wallet.address);
    const m2 = siweMessage(h, wallet.address, n2, {
      statement: undefined,
      expirationTime: new Date(Date.now() + 60_000),
    });
    const token = await login(null, await wallet.signMessage(m2), m2);
    expect((await verifyToken(h, token)).claims.address).toBe(wallet.address);
  });

  it("signs in with any of several outstanding nonces", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    const older = await getNonce(wallet.address);
    await getNonce(wallet.address);
    const message = siweMessage(h, wallet.address, older);
    expect(await login(wallet.address, await wallet.signMessage(message), message)).toMatch(/^ey/);
  });

  const minute = 60_000;
  it.each([
    ["domain", { domain: "evil.example" }],
    ["uri", { uri: "https://evil.example/login" }],
    ["uri scheme (javascript:)", { uri: "javascript://localhost:8080/%0aalert(1)" }],
    ["uri scheme (ftp:)", { uri: "ftp://localhost:8080/login" }],
    ["uri userinfo", { uri: "http://evil@localhost:8080/login" }],
    ["uri port", { uri: "http://localhost:9999/login" }],
    ["chain id", { chainId: 1 }],
    ["expired", { expirationTime: new Date(Date.now() - 5 * minute) }],
    ["not before", { notBefore: new Date(Date.now() + 10 * minute) }],
    ["issued in the future", { issuedAt: new Date(Date.now() + 10 * minute) }],
    ["issued before the nonce lifetime", { issuedAt: new Date(Date.now() - 10 * minute) }],
  ])("refuses a message with the wrong %s (401), consuming the nonce", async (_check, overrides) => {
    const wallet = newWallet();
    await signedUp(wallet);
    const nonce = await getNonce(wallet.address);
    const message = siweMessage(h, wallet.address, nonce, overrides);
    expect(await failureOf(login(wallet.address, await wallet.signMessage(message), message))).toEqual(
      loginFailed,
    );
    expect(await h.redis.exists(nonceKey(wallet.address))).toBe(0);
  });

  it("refuses a message with another nonce than the ones issued, leaving those in place", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    const nonce = await getNonce(wallet.address);
    const message = siweMessage(h, wallet.address, nonce + 1);
    expect(await failureOf(login(wallet.address, await wallet.signMessage(message), message))).toEqual(
      loginFailed,
    );
    expect(await storedNonces(wallet.address)).toEqual([`${nonce}|${origin.ip}`]);
  });

  it("refuses a message for another address than the one signing in", async () => {
    const wallet = newWallet();
    const other = newWallet();
    await signedUp(wallet);
    const nonce = await getNonce(wallet.address);
    // Signed by the claimed address, but the message names another one.
    const message = siweMessage(h, other.address, nonce);
    expect(await failureOf(login(wallet.address, await wallet.signMessage(message), message))).toEqual(
      loginFailed,
    );
  });

  it("refuses a message that breaks the grammar", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    const nonce = await getNonce(wallet.address);
    const message = siweMessage(h, wallet.address, nonce).replace("Version: 1", "Version: 2");
    expect(await failureOf(login(wallet.address, await wallet.signMessage(message), message))).toEqual(
      loginFailed,
    );
  });
});

describe("contract wallets (EIP-1271)", () => {
  let walletAddress: string;
  const owner = newWallet();

  beforeAll(async () => {
    const deployer = h.chain.signers[1];
    if (!deployer) throw new Error("no funded account");
    walletAddress = await deployContractWallet(deployer, h.chain.provider, owner.address);
    await h.users.seed({ address: walletAddress });
  });

  it("signs a contract wallet in when the contract accepts its owner's signature", async () => {
    const nonce = await getNonce(walletAddress);
    const message = siweMessage(h, walletAddress, nonce);
    const token = await login(walletAddress, await owner.signMessage(message), message);
    expect((await verifyToken(h, token)).claims.address).toBe(walletAddress);
    // The legacy text works the same way, also without `message` and with several nonces outstanding.
    const legacyNonce = await getNonce(walletAddress);
    await getNonce(walletAddress);
    expect(await login(walletAddress, await owner.signMessage(`LOGIN: ${legacyNonce}`))).toMatch(/^ey/);
  });

  it("refuses a signature the contract rejects", async () => {
    const nonce = await getNonce(walletAddress);
    const message = siweMessage(h, walletAddress, nonce);
    expect(await failureOf(login(walletAddress, await newWallet().signMessage(message), message))).toEqual(
      loginFailed,
    );
    const legacyNonce = await getNonce(walletAddress);
    expect(
      await failureOf(login(walletAddress, await newWallet().signMessage(`LOGIN: ${legacyNonce}`))),
    ).toEqual(loginFailed);
  });
});

describe("the account copy (docs/adr/0012-the-account-copy.md)", () => {
  const lookups = (address: string) =>
    h.users.requests(UsersRpc.byAddress).filter((r) => r.address.toLowerCase() === address.toLowerCase())
      .length;
  const entryKey = (wallet: Wallet) => `${h.prefix}account:${wallet.address.toLowerCase()}`;
  /**
   * A verified user, signed in once, whose account's changes so far (the verification, then the chain role
   * the first sign-in told the users service) have both reached auth; not in the copy.
   */
  const settledUser = async (wallet: Wallet) => {
    const user = await signedUp(wallet);
    await legacyLogin(h, wallet, origin);
    const generation = `${h.prefix}account-gen:${wallet.address.toLowerCase()}`;
    await waitFor(async () => Number(await h.redis.get(generation)) >= 2, 10_000, "the account's changes");
    // The first sign-in may have kept the account (when it read it again after its own change): not now.
    await h.redis.del(entryKey(wallet));
    return { user, before: lookups(wallet.address) };
  };

  it("asks the users service once; later sign-ins read the copy", async () => {
    const wallet = newWallet();
    const { before } = await settledUser(wallet);
    await legacyLogin(h, wallet, origin);
    expect(lookups(wallet.address)).toBe(before + 1);
    expect(await h.redis.exists(entryKey(wallet))).toBe(1);
    const { claims } = await verifyToken(h, await legacyLogin(h, wallet, origin));
    expect(claims.address).toBe(wallet.address);
    expect(lookups(wallet.address)).toBe(before + 1);
  });

  it("drops an account that changed, even by SQL alone: the next sign-in has the new fields", async () => {
    const wallet = newWallet();
    const { user, before } = await settledUser(wallet);
    await legacyLogin(h, wallet, origin);
    await h.users.sql.query(`update users."user" set username = $1 where id = $2`, [
      `${user.username}_2`,
      user.id,
    ]);
    await waitFor(async () => (await h.redis.exists(entryKey(wallet))) === 0, 10_000, "the copy dropped");
    const { claims } = await verifyToken(h, await legacyLogin(h, wallet, origin));
    expect(claims.unique_name).toBe(`${user.username}_2`);
    expect(lookups(wallet.address)).toBe(before + 2);
  });

  it("drops the account when the session follows a role change, deletion or new e-mail", async () => {
    const wallet = newWallet();
    const { user } = await settledUser(wallet);
    const payload = { userId: user.id, address: wallet.address };
    // Each event as the users service publishes it, handled while the trigger's account-changed is
    // still on its way (here: never sent): the handler itself drops the copy. The deletion last: after
    // it, the session refuses the account for good.
    for (const handle of [
      () =>
        h.app.accounts.roleChanged(
          { ...payload, role: "Viewer", previousRole: "Base", changedBy: "1" },
          testMessageContext(),
        ),
      () =>
        h.app.accounts.emailChanged(
          { ...payload, mailAddress: `new.${user.id}@example.org` },
          testMessageContext(),
        ),
      () => h.app.accounts.deleted(payload, testMessageContext()),
    ]) {
      await legacyLogin(h, wallet, origin);
      expect(await h.redis.exists(entryKey(wallet))).toBe(1);
      await handle();
      expect(await h.redis.exists(entryKey(wallet))).toBe(0);
    }
  });

  it("an admin's change that lands while a sign-in holds the older account wins: it reads again", async () => {
    const wallet = newWallet();
    const { user } = await settledUser(wallet);
    // The users service answers Base; before the answer arrives, an admin makes the user a Viewer and
    // the auth service handles the role change (copy dropped, older tokens revoked, session Viewer).
    h.users.beforeNextAnswer(UsersRpc.byAddress, async () => {
      const { rows } = await h.users.sql.query(
        `update users."user" set role = 'Viewer', account_version = account_version + 1 where id = $1
         returning account_version::int as version`,
        [user.id],
      );
      await h.app.accounts.roleChanged(
        {
          userId: user.id,
          address: wallet.address,
          role: "Viewer",
          previousRole: "Base",
          changedBy: "1",
          version: rows[0].version,
        },
        testMessageContext(),
      );
    });
    const before = lookups(wallet.address);
    const { claims } = await verifyToken(h, await legacyLogin(h, wallet, origin));
    expect(claims.role).toBe("Viewer");
    expect(await h.redis.hget(`${h.prefix}session:${user.id}`, "role")).toBe("Viewer");
    expect(lookups(wallet.address)).toBe(before + 2);
  });

  it("does not keep an account read before a change that arrived meanwhile", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    const stale = await h.users.byAddress(wallet.address);
    const accounts = createAccountCopy({
      redis: h.redis,
      prefix: h.prefix,
      ttlSeconds: 60,
      // The users service answers, then the change's event is handled before the answer is kept.
      fetch: async () => {
        await accounts.invalidate(wallet.address);
        return stale;
      },
    });
    expect((await accounts.byAddress(wallet.address, testMessageContext())).account).toEqual(stale);
    expect(await h.redis.exists(entryKey(wallet))).toBe(0);
  });

  it("with ACCOUNT_COPY_TTL_SECONDS=0 asks the users service every time, and still tells a change", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    let asked = 0;
    const accounts = createAccountCopy({
      redis: h.redis,
      prefix: h.prefix,
      ttlSeconds: 0,
      fetch: (address) => {
        asked += 1;
        return h.users.byAddress(address);
      },
    });
    const first = await accounts.byAddress(wallet.address, testMessageContext());
    const second = await accounts.byAddress(wallet.address, testMessageContext());
    expect(asked).toBe(2);
    expect(second.account).toEqual(first.account);
    expect(await h.redis.exists(entryKey(wallet))).toBe(0);
  });

  it("never keeps an unverified account: the sign-in after verification is not refused from a copy", async () => {
    const wallet = newWallet();
    const user = await signedUp(wallet, { isVerified: false });
    expect(await outcome(legacyLogin(h, wallet, origin))).toBe("EMAIL_NOT_VERIFIED");
    expect(await h.redis.exists(entryKey(wallet))).toBe(0);
    await h.users.sql.query(`update users."user" set is_verified = true where id = $1`, [user.id]);
    expect(await outcome(legacyLogin(h, wallet, origin))).toBe("ok");
  });
});

describe("chain unavailable", () => {
  // Last in the file: it stops this file's chain.
  it("answers 503 CHAIN_UNAVAILABLE instead of issuing a token with an unchecked role", async () => {
    const wallet = newWallet();
    await signedUp(wallet);
    const nonce = await getNonce(wallet.address);
    const signature = await wallet.signMessage(`LOGIN: ${nonce}`);
    await h.anvil.stop();
    const failure = await failureOf(login(wallet.address, signature));
    expect(failure).toMatchObject({ kind: "unavailable", code: "CHAIN_UNAVAILABLE" });
  });
});
