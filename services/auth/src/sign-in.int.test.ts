import { registryAt, UserStatus, waitForReceipt } from "@fundraise/contracts";
import { AuthRpc } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOGIN_FAILED_MESSAGE } from "./sign-in/auth.service.ts";
import { deployContractWallet } from "./test/contract-wallet.ts";
import {
  failureOf,
  type Harness,
  legacyLogin,
  newWallet,
  origin,
  siweMessage,
  startHarness,
  verifyToken,
} from "./test/harness.ts";

// Sign-in on the real servers: Postgres, RabbitMQ, Redis, anvil with the platform deployed. The users
// service is another team's work in progress: its four RPCs are answered by an in-test stand-in.
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ NONCE_PER_ADDRESS_PER_MINUTE: "5", LOGIN_PER_ADDRESS_PER_MINUTE: "5" });
});

afterAll(async () => {
  await h?.close();
});

const nonceKey = (address: string) => `${h.prefix}nonce:${address.toLowerCase()}`;
const getNonce = (address: string) => h.client.call(AuthRpc.nonce, { address, origin });
const login = (address: string | null, signedMessage: string | null, message?: string | null) =>
  h.client.call(AuthRpc.login, {
    login: { address, signedMessage, ...(message === undefined ? {} : { message }) },
    origin,
  });
const loginFailed = { kind: "unauthenticated", code: "LOGIN_FAILED", message: LOGIN_FAILED_MESSAGE };

async function setChainStatus(address: string, status: number) {
  const registry = registryAt(h.chain.deployment.registry, h.chain.signers[0]);
  const sent = await registry.editUserStatus(address, status);
  await waitForReceipt(h.chain.provider, sent.hash);
}

describe("users service stand-in: GetNonce", () => {
  it("issues a non-negative 32-bit nonce, stored per address with the nonce lifetime", async () => {
    const wallet = newWallet();
    const nonce = await getNonce(wallet.address.toLowerCase());
    expect(Number.isInteger(nonce)).toBe(true);
    expect(nonce).toBeGreaterThanOrEqual(0);
    expect(nonce).toBeLessThan(2 ** 31);
    expect(await h.redis.get(nonceKey(wallet.address))).toBe(String(nonce));
    const ttl = await h.redis.ttl(nonceKey(wallet.address));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(300);
  });

  it("answers the same way for registered and unknown addresses", async () => {
    const known = newWallet();
    h.users.seed({ address: known.address });
    const a = await getNonce(known.address);
    const b = await getNonce(newWallet().address);
    expect(typeof a).toBe(typeof b);
    expect(h.users.calls.byAddress).not.toContainEqual({ address: known.address });
  });

  it("replaces an earlier nonce: only the newest signs in", async () => {
    const wallet = newWallet();
    h.users.seed({ address: wallet.address });
    const first = await getNonce(wallet.address);
    await getNonce(wallet.address);
    const signature = await wallet.signMessage(`LOGIN: ${first}`);
    expect(await failureOf(login(wallet.address, signature))).toEqual(loginFailed);
  });

  it("refuses a malformed address with 400 and writes nothing", async () => {
    const keys = async () => (await h.redis.keys(`${h.prefix}*`)).sort();
    const before = await keys();
    for (const address of ["0x123", "not-an-address", "0x5B38Da6a701c568545dCfcB03FcB875f56beddc4"]) {
      const failure = await failureOf(getNonce(address));
      expect(failure).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
      expect(failure.message).toContain("address");
    }
    expect(await keys()).toEqual(before);
  });

  it("limits nonces per address (429)", async () => {
    const wallet = newWallet();
    const outcomes: string[] = [];
    // 2 × limit + 1 calls: whichever way a minute boundary splits them, one window sees more than 5.
    for (let i = 0; i < 11; i++) {
      outcomes.push(
        await getNonce(wallet.address).then(
          () => "ok",
          (e: { code: string }) => e.code,
        ),
      );
    }
    expect(outcomes.slice(0, 5)).toEqual(["ok", "ok", "ok", "ok", "ok"]);
    expect(outcomes).toContain("RATE_LIMITED");
    expect(outcomes.filter((o) => o !== "ok" && o !== "RATE_LIMITED")).toEqual([]);
  });
});

describe("users service stand-in: legacy login", () => {
  it("signs `LOGIN: <nonce>` in and issues a token with every claim", async () => {
    const wallet = newWallet();
    const user = h.users.seed({
      address: wallet.address,
      username: "ada",
      surname: "Lovelace",
      role: "Base",
    });
    const token = await legacyLogin(h, wallet);
    const { claims, kid } = await verifyToken(h, token);
    expect(kid).not.toBe("");
    expect(claims).toMatchObject({
      sub: String(user.id),
      nameid: String(user.id),
      unique_name: "ada",
      role: "Base",
      family_name: "Lovelace",
      address: wallet.address,
      iss: "fundraise-auth",
      aud: "fundraise",
    });
    expect(claims.exp - claims.iat).toBe(7200);
    expect(claims.jti).toMatch(/^[0-9a-f-]{36}$/);
    // The session hash the gateway reads: the current role, with a lifetime that covers the token.
    expect(await h.redis.hgetall(`${h.prefix}session:${user.id}`)).toEqual({ role: "Base" });
    expect(await h.redis.ttl(`${h.prefix}session:${user.id}`)).toBeGreaterThan(7200);
  });

  it("consumes the nonce: the same signature replayed is refused", async () => {
    const wallet = newWallet();
    h.users.seed({ address: wallet.address });
    const nonce = await getNonce(wallet.address);
    const signature = await wallet.signMessage(`LOGIN: ${nonce}`);
    await login(wallet.address, signature);
    expect(await h.redis.exists(nonceKey(wallet.address))).toBe(0);
    expect(await failureOf(login(wallet.address, signature))).toEqual(loginFailed);
  });

  it("consumes the nonce on a failed attempt too", async () => {
    const wallet = newWallet();
    h.users.seed({ address: wallet.address });
    const nonce = await getNonce(wallet.address);
    expect(await failureOf(login(wallet.address, await newWallet().signMessage(`LOGIN: ${nonce}`)))).toEqual(
      loginFailed,
    );
    expect(await h.redis.exists(nonceKey(wallet.address))).toBe(0);
    // The right signature over the consumed nonce no longer works.
    expect(await failureOf(login(wallet.address, await wallet.signMessage(`LOGIN: ${nonce}`)))).toEqual(
      loginFailed,
    );
  });

  it("answers every failure with one 401 that does not say which part failed", async () => {
    const known = newWallet();
    h.users.seed({ address: known.address });
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
    // The right key over the wrong nonce.
    const n4 = await getNonce(known.address);
    const wrongNonce = await failureOf(login(known.address, await known.signMessage(`LOGIN: ${n4 + 1}`)));
    for (const failure of [unknown, missing, expired, otherSigner, wrongNonce])
      expect(failure).toEqual(loginFailed);
  });

  it("refuses an unverified user with 403 after a valid signature", async () => {
    const wallet = newWallet();
    h.users.seed({ address: wallet.address, isVerified: false });
    const failure = await failureOf(legacyLogin(h, wallet));
    expect(failure).toEqual({
      kind: "forbidden",
      code: "EMAIL_NOT_VERIFIED",
      message: "Verify your e-mail first.",
    });
  });

  it("refuses malformed input with 400 and leaves the nonce in place", async () => {
    const wallet = newWallet();
    h.users.seed({ address: wallet.address });
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
    expect(await h.redis.get(nonceKey(wallet.address))).toBe(String(nonce));
    expect(await login(wallet.address, signature)).toMatch(/^ey/);
  });

  it("limits login attempts per address (429)", async () => {
    const wallet = newWallet();
    const outcomes: string[] = [];
    for (let i = 0; i < 11; i++) {
      const signature = await wallet.signMessage("LOGIN: 12345678");
      outcomes.push(
        await login(wallet.address, signature).then(
          () => "ok",
          (e: { code: string }) => e.code,
        ),
      );
    }
    expect(outcomes.slice(0, 5)).toEqual(Array(5).fill("LOGIN_FAILED"));
    expect(outcomes).toContain("RATE_LIMITED");
  });
});

describe("users service stand-in: chain role at login", () => {
  it("reads the role from the registry before issuing the token and stores it", async () => {
    const wallet = newWallet();
    const user = h.users.seed({ address: wallet.address, role: "Base" });
    await setChainStatus(wallet.address, UserStatus.Whitelisted);
    const { claims } = await verifyToken(h, await legacyLogin(h, wallet));
    expect(claims.role).toBe("Whitelist");
    expect(h.users.calls.setChainRole).toContainEqual({ address: wallet.address, role: "Whitelist" });
    expect(h.users.rows.get(user.id)?.role).toBe("Whitelist");
    expect(await h.redis.hget(`${h.prefix}session:${user.id}`, "role")).toBe("Whitelist");
  });

  it("leaves the role alone when the chain agrees", async () => {
    const wallet = newWallet();
    h.users.seed({ address: wallet.address, role: "Base" });
    await legacyLogin(h, wallet);
    expect(h.users.calls.setChainRole).not.toContainEqual(
      expect.objectContaining({ address: wallet.address }),
    );
  });

  it("gives the chain's Admin role to a registry admin", async () => {
    const admin = h.chain.signers[0];
    if (!admin) throw new Error("no deployer");
    h.users.seed({ address: admin.address, role: "Base" });
    const nonce = await getNonce(admin.address);
    const token = await login(admin.address, await admin.signMessage(`LOGIN: ${nonce}`));
    expect((await verifyToken(h, token)).claims.role).toBe("Admin");
  });

  it("lets a blacklisted user sign in, as Blacklist", async () => {
    const wallet = newWallet();
    h.users.seed({ address: wallet.address, role: "Base" });
    await setChainStatus(wallet.address, UserStatus.Blacklisted);
    expect((await verifyToken(h, await legacyLogin(h, wallet))).claims.role).toBe("Blacklist");
  });
});

describe("users service stand-in: Sign-In with Ethereum (EIP-4361)", () => {
  it("signs in with a full SIWE message, the address taken from the request or the message", async () => {
    const wallet = newWallet();
    h.users.seed({ address: wallet.address });
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

  const minute = 60_000;
  it.each([
    ["domain", { domain: "evil.example" }],
    ["uri", { uri: "https://evil.example/login" }],
    ["chain id", { chainId: 1 }],
    ["expired", { expirationTime: new Date(Date.now() - 5 * minute) }],
    ["not before", { notBefore: new Date(Date.now() + 10 * minute) }],
    ["issued in the future", { issuedAt: new Date(Date.now() + 10 * minute) }],
    ["issued before the nonce lifetime", { issuedAt: new Date(Date.now() - 10 * minute) }],
  ])("refuses a message with the wrong %s (401), consuming the nonce", async (_check, overrides) => {
    const wallet = newWallet();
    h.users.seed({ address: wallet.address });
    const nonce = await getNonce(wallet.address);
    const message = siweMessage(h, wallet.address, nonce, overrides);
    expect(await failureOf(login(wallet.address, await wallet.signMessage(message), message))).toEqual(
      loginFailed,
    );
    expect(await h.redis.exists(nonceKey(wallet.address))).toBe(0);
  });

  it("refuses a message with another nonce than the one issued", async () => {
    const wallet = newWallet();
    h.users.seed({ address: wallet.address });
    const nonce = await getNonce(wallet.address);
    const message = siweMessage(h, wallet.address, nonce + 1);
    expect(await failureOf(login(wallet.address, await wallet.signMessage(message), message))).toEqual(
      loginFailed,
    );
  });

  it("refuses a message for another address than the one signing in", async () => {
    const wallet = newWallet();
    const other = newWallet();
    h.users.seed({ address: wallet.address });
    const nonce = await getNonce(wallet.address);
    // Signed by the claimed address, but the message names another one.
    const message = siweMessage(h, other.address, nonce);
    expect(await failureOf(login(wallet.address, await wallet.signMessage(message), message))).toEqual(
      loginFailed,
    );
  });

  it("refuses a message that breaks the grammar", async () => {
    const wallet = newWallet();
    h.users.seed({ address: wallet.address });
    const nonce = await getNonce(wallet.address);
    const message = siweMessage(h, wallet.address, nonce).replace("Version: 1", "Version: 2");
    expect(await failureOf(login(wallet.address, await wallet.signMessage(message), message))).toEqual(
      loginFailed,
    );
  });
});

describe("users service stand-in: contract wallets (EIP-1271)", () => {
  let walletAddress: string;
  const owner = newWallet();

  beforeAll(async () => {
    const deployer = h.chain.signers[1];
    if (!deployer) throw new Error("no funded account");
    walletAddress = await deployContractWallet(deployer, h.chain.provider, owner.address);
    h.users.seed({ address: walletAddress });
  });

  it("signs a contract wallet in when the contract accepts its owner's signature", async () => {
    const nonce = await getNonce(walletAddress);
    const message = siweMessage(h, walletAddress, nonce);
    const token = await login(walletAddress, await owner.signMessage(message), message);
    expect((await verifyToken(h, token)).claims.address).toBe(walletAddress);
    // The legacy text works the same way.
    const legacyNonce = await getNonce(walletAddress);
    expect(await login(walletAddress, await owner.signMessage(`LOGIN: ${legacyNonce}`))).toMatch(/^ey/);
  });

  it("refuses a signature the contract rejects", async () => {
    const nonce = await getNonce(walletAddress);
    const message = siweMessage(h, walletAddress, nonce);
    expect(await failureOf(login(walletAddress, await newWallet().signMessage(message), message))).toEqual(
      loginFailed,
    );
  });
});

describe("users service stand-in: chain unavailable", () => {
  // Last in the file: it stops this file's chain.
  it("answers 503 CHAIN_UNAVAILABLE instead of issuing a token with an unchecked role", async () => {
    const wallet = newWallet();
    h.users.seed({ address: wallet.address });
    const nonce = await getNonce(wallet.address);
    const signature = await wallet.signMessage(`LOGIN: ${nonce}`);
    await h.anvil.stop();
    const failure = await failureOf(login(wallet.address, signature));
    expect(failure).toMatchObject({ kind: "unavailable", code: "CHAIN_UNAVAILABLE" });
  });
});
