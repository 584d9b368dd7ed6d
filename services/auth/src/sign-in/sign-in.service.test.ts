import { testMessageContext } from "@fundraise/bus/testing";
import { ErrorCode, SESSION_VERSION_CLAIM } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import { authOnMemory, newOrigin, newWallet, SETTINGS, siweMessage } from "../test/memory-auth.ts";
import { LOGIN_FAILED_MESSAGE, NOT_VERIFIED_MESSAGE } from "./sign-in.service.ts";

// Sign-in (rules.md §2, §7) on memory (test/memory-auth.ts): the real signed-message check, token issuer
// and service; nonces, rate limits, sessions and the account copy in memory; A STAND-IN FOR THE USERS
// SERVICE on the in-memory bus; a chain stand-in. Redis's scripts, Postgres and the real chain are the
// integration suites' (rpc/sign-in.int.test.ts).

type Setup = Awaited<ReturnType<typeof authOnMemory>>;
type Wallet = ReturnType<typeof newWallet>;
const ctx = () => testMessageContext();
const loginFailed = { kind: "unauthenticated", code: ErrorCode.LOGIN_FAILED, message: LOGIN_FAILED_MESSAGE };

function client(h: Setup, origin = newOrigin()) {
  return {
    origin,
    nonce: (address: string) => h.signIn.issueNonce(address, origin),
    login: (address: string | null, signedMessage: string | null, message?: string) =>
      h.signIn.login(
        { address, signedMessage, ...(message === undefined ? {} : { message }) },
        origin,
        ctx(),
      ),
    /** GetNonce, then the legacy `LOGIN: <nonce>` signature without `message`, as the web client does. */
    async legacyLogin(wallet: Wallet) {
      const nonce = await h.signIn.issueNonce(wallet.address, origin);
      return h.signIn.login(
        { address: wallet.address, signedMessage: await wallet.signMessage(`LOGIN: ${nonce}`) },
        origin,
        ctx(),
      );
    },
  };
}
/** The call's error code, or "ok". */
const outcome = (call: Promise<unknown>) =>
  call.then(
    () => "ok",
    (error: { code?: string }) => error.code ?? String(error),
  );

/** A signed-up, verified user on memory, its client, and a nonce issued to its address. */
async function signedUpWithNonce() {
  const h = await authOnMemory();
  const wallet = newWallet();
  h.users.seed(wallet.address);
  const c = client(h);
  const nonce = await c.nonce(wallet.address);
  return { h, wallet, c, nonce };
}

describe("GetNonce", () => {
  it("issues an 8 to 10 digit nonce, outstanding for the address, the same for registered and unknown addresses", async () => {
    const h = await authOnMemory();
    const known = newWallet();
    h.users.seed(known.address);
    const stranger = newWallet();
    const c = client(h);
    for (const wallet of [known, stranger]) {
      const nonce = await c.nonce(wallet.address);
      expect(String(nonce)).toMatch(/^\d{8,10}$/);
      expect(nonce).toBeLessThan(2 ** 31);
      expect(h.nonces.outstanding(wallet.address)).toEqual([{ nonce, ip: c.origin.ip }]);
    }
  });

  it("keeps earlier nonces: each outstanding one signs in once, in any order", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    h.users.seed(wallet.address);
    const c = client(h);
    const nonces = [
      await c.nonce(wallet.address),
      await c.nonce(wallet.address),
      await c.nonce(wallet.address),
    ];
    for (const nonce of [nonces[1], nonces[2], nonces[0]]) {
      expect(await c.login(wallet.address, await wallet.signMessage(`LOGIN: ${nonce}`))).toMatch(/^ey/);
    }
    expect(h.nonces.outstanding(wallet.address)).toEqual([]);
  });

  it("bounds the outstanding nonces per address, dropping the requesting IP's oldest first", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    const owner = client(h);
    const other = client(h);
    const owners = [await owner.nonce(wallet.address), await owner.nonce(wallet.address)];
    const others: number[] = [];
    for (let i = 0; i < SETTINGS.noncesPerAddress; i++) others.push(await other.nonce(wallet.address));
    // Five outstanding at most: the other IP's two newest requests pushed out its own oldest, never the owner's.
    expect(h.nonces.outstanding(wallet.address).map((n) => n.nonce)).toEqual([...owners, ...others.slice(2)]);
  });

  it("refuses a malformed address with 400 naming the field, and issues nothing", async () => {
    const h = await authOnMemory();
    const c = client(h);
    await expect(c.nonce("0x1234")).rejects.toMatchObject({
      kind: "validation",
      code: ErrorCode.VALIDATION_FAILED,
      message: expect.stringContaining("address"),
    });
    await expect(c.nonce("")).rejects.toMatchObject({ code: ErrorCode.VALIDATION_FAILED });
  });

  it("limits nonces per client IP and address (429), never per address alone", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    const c = client(h);
    const outcomes: string[] = [];
    for (let i = 0; i < SETTINGS.limits.noncePerIpAddressPerMinute + 2; i++)
      outcomes.push(await outcome(c.nonce(wallet.address)));
    expect(outcomes.slice(0, SETTINGS.limits.noncePerIpAddressPerMinute)).not.toContain("RATE_LIMITED");
    expect(outcomes.slice(-2)).toEqual(["RATE_LIMITED", "RATE_LIMITED"]);
    // Past the limit nothing is issued: the outstanding ones are the last five issued.
    expect(h.nonces.outstanding(wallet.address)).toHaveLength(SETTINGS.noncesPerAddress);
    // Another client asking for the same address is not limited by the first one's requests.
    expect(await outcome(client(h).nonce(wallet.address))).toBe("ok");
  });
});

describe("login with the legacy `LOGIN: <nonce>`", () => {
  it("signs in and issues a token with every claim, at the account's version; the session holds its role", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    const user = h.users.seed(wallet.address, { username: "ada", version: 4 });
    const claims = await h.claimsOf(await client(h).legacyLogin(wallet));
    expect(claims).toMatchObject({
      sub: String(user.id),
      nameid: String(user.id),
      unique_name: "ada",
      role: "Base",
      // The wallet address, as rules.md §2.13 and the first backend have it (not the surname).
      family_name: wallet.address,
      address: wallet.address,
      iss: "fundraise-auth",
      aud: "fundraise",
      [SESSION_VERSION_CLAIM]: 4,
    });
    expect(Number(claims.exp) - Number(claims.iat)).toBe(7200);
    expect(claims.jti).toMatch(/^[0-9a-f-]{36}$/);
    expect(h.sessions.states.get(user.id)).toEqual({
      role: "Base",
      version: 4,
      revokedBelow: 0,
      deleted: false,
    });
  });

  it("consumes the nonce: the same signature replayed is refused, with or without the text", async () => {
    const { wallet, c, nonce } = await signedUpWithNonce();
    const signature = await wallet.signMessage(`LOGIN: ${nonce}`);
    expect(await c.login(wallet.address, signature, `LOGIN: ${nonce}`)).toMatch(/^ey/);
    await expect(c.login(wallet.address, signature)).rejects.toMatchObject(loginFailed);
    await expect(c.login(wallet.address, signature, `LOGIN: ${nonce}`)).rejects.toMatchObject(loginFailed);
  });

  it("a signature by another key consumes nothing: the owner still signs in with the nonce", async () => {
    const { h, wallet, c, nonce } = await signedUpWithNonce();
    await expect(
      c.login(wallet.address, await newWallet().signMessage(`LOGIN: ${nonce}`)),
    ).rejects.toMatchObject(loginFailed);
    expect(h.nonces.outstanding(wallet.address)).toEqual([{ nonce, ip: c.origin.ip }]);
    expect(await c.login(wallet.address, await wallet.signMessage(`LOGIN: ${nonce}`))).toMatch(/^ey/);
  });

  it("answers every failure with one 401 that does not say which part failed; a signed attempt of an unknown address uses its nonce", async () => {
    const h = await authOnMemory();
    const known = newWallet();
    h.users.seed(known.address);
    const stranger = newWallet();
    const c = client(h);
    const n1 = await c.nonce(stranger.address);
    const failures = [
      // Unknown address, correctly signed.
      c.login(stranger.address, await stranger.signMessage(`LOGIN: ${n1}`)),
      // No nonce ever issued.
      c.login(known.address, await known.signMessage("LOGIN: 12345678")),
    ];
    const n2 = await c.nonce(known.address);
    // The signature of another address; the right key over the wrong nonce, without and with the text.
    failures.push(c.login(known.address, await stranger.signMessage(`LOGIN: ${n2}`)));
    failures.push(c.login(known.address, await known.signMessage(`LOGIN: ${n2 + 1}`)));
    failures.push(c.login(known.address, await known.signMessage(`LOGIN: ${n2 + 1}`), `LOGIN: ${n2 + 1}`));
    for (const failure of failures)
      await expect(failure).rejects.toEqual(expect.objectContaining(loginFailed));
    expect(h.nonces.outstanding(stranger.address)).toEqual([]);
  });

  it("refuses an unverified user with 403 after a valid signature", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    h.users.seed(wallet.address, { isVerified: false });
    await expect(client(h).legacyLogin(wallet)).rejects.toMatchObject({
      kind: "forbidden",
      code: ErrorCode.EMAIL_NOT_VERIFIED,
      message: NOT_VERIFIED_MESSAGE,
    });
  });

  it("refuses malformed input with 400 naming the field, and leaves the nonce in place", async () => {
    const { wallet, c, nonce } = await signedUpWithNonce();
    const signature = await wallet.signMessage(`LOGIN: ${nonce}`);
    for (const [call, field] of [
      [c.login("0x1234", signature), "address"],
      [c.login(wallet.address, null), "signedMessage"],
      [c.login(wallet.address, "signed!"), "signedMessage"],
    ] as const) {
      await expect(call).rejects.toMatchObject({
        kind: "validation",
        code: ErrorCode.VALIDATION_FAILED,
        message: expect.stringContaining(field),
      });
    }
    expect(await c.login(wallet.address, signature)).toMatch(/^ey/);
  });

  it("limits failed attempts per client IP and address (429); successful ones do not count", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    h.users.seed(wallet.address);
    const c = client(h);
    const limit = SETTINGS.limits.loginFailuresPerIpAddressPerMinute;
    // More sign-ins than the limit of failures, from one IP: all succeed (their nonces from other IPs,
    // as GetNonce has its own limit).
    for (let i = 0; i < limit + 2; i++) {
      const nonce = await client(h).nonce(wallet.address);
      expect(await c.login(wallet.address, await wallet.signMessage(`LOGIN: ${nonce}`))).toMatch(/^ey/);
    }
    const outcomes: string[] = [];
    for (let i = 0; i < limit + 1; i++) {
      outcomes.push(await outcome(c.login(wallet.address, await wallet.signMessage("LOGIN: 12345678"))));
    }
    expect(outcomes).toEqual([...Array(limit).fill(ErrorCode.LOGIN_FAILED), ErrorCode.RATE_LIMITED]);
    // Past the limit even a good signature is refused from that IP …
    const nonce = await client(h).nonce(wallet.address);
    const good = await wallet.signMessage(`LOGIN: ${nonce}`);
    expect(await outcome(c.login(wallet.address, good))).toBe(ErrorCode.RATE_LIMITED);
    // … and nobody is locked out: the owner signs in from another IP with the same nonce.
    expect(await client(h).login(wallet.address, good)).toMatch(/^ey/);
  });
});

describe("Sign-In with Ethereum (EIP-4361)", () => {
  it("signs in with a full SIWE message, the address taken from the request or the message", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    h.users.seed(wallet.address);
    const c = client(h);
    for (const address of [wallet.address, null]) {
      const message = siweMessage(wallet.address, await c.nonce(wallet.address));
      const claims = await h.claimsOf(await c.login(address, await wallet.signMessage(message), message));
      expect(claims.address).toBe(wallet.address);
    }
  });

  it("refuses a message for another domain, chain or address; the nonce it names is used up", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    h.users.seed(wallet.address);
    const c = client(h);
    for (const overrides of [{ domain: "evil.example" }, { chainId: 1 }, { address: newWallet().address }]) {
      const nonce = await c.nonce(wallet.address);
      const message = siweMessage(wallet.address, nonce, overrides);
      await expect(c.login(wallet.address, await wallet.signMessage(message), message)).rejects.toMatchObject(
        loginFailed,
      );
      expect(h.nonces.outstanding(wallet.address).map((n) => n.nonce)).not.toContain(nonce);
    }
  });

  it("legacy texts off: `LOGIN: <nonce>` is refused like any failed sign-in, SIWE still signs in", async () => {
    const h = await authOnMemory({ legacyMessages: false });
    const wallet = newWallet();
    h.users.seed(wallet.address);
    const c = client(h);
    await expect(c.legacyLogin(wallet)).rejects.toMatchObject(loginFailed);
    const message = siweMessage(wallet.address, await c.nonce(wallet.address));
    expect(await c.login(null, await wallet.signMessage(message), message)).toMatch(/^ey/);
  });
});

describe("the role at login", () => {
  it("reads the chain's role first, tells the users service when it changed, and issues the token with it", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    const user = h.users.seed(wallet.address, { version: 1 });
    h.chain.roles.set(wallet.address.toLowerCase(), "Whitelist");
    const claims = await h.claimsOf(await client(h).legacyLogin(wallet));
    expect(claims).toMatchObject({ role: "Whitelist", [SESSION_VERSION_CLAIM]: 2 });
    expect(h.users.chainRoles).toEqual([{ address: wallet.address, role: "Whitelist" }]);
    expect(h.sessions.states.get(user.id)).toMatchObject({ role: "Whitelist", version: 2 });
  });

  it("leaves the users service alone when the chain agrees with what it last saw", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    h.users.seed(wallet.address, { chainRole: "Base" });
    expect((await h.claimsOf(await client(h).legacyLogin(wallet))).role).toBe("Base");
    expect(h.users.chainRoles).toEqual([]);
  });

  it("the chain unreachable: 503 CHAIN_UNAVAILABLE instead of a token with an unchecked role; an unknown address is still 401", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    const user = h.users.seed(wallet.address);
    h.chain.down = true;
    await expect(client(h).legacyLogin(wallet)).rejects.toMatchObject({
      kind: "unavailable",
      code: ErrorCode.CHAIN_UNAVAILABLE,
    });
    expect(h.sessions.states.has(user.id)).toBe(false);
    await expect(client(h).legacyLogin(newWallet())).rejects.toMatchObject(loginFailed);
  });

  it("an admin's change that lands while the sign-in holds the older account wins: it reads again", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    const user = h.users.seed(wallet.address);
    await client(h).legacyLogin(wallet);
    expect(h.accounts.kept.has(wallet.address.toLowerCase())).toBe(true);
    // The admin's change reached the session, not yet the copy the next sign-in reads first.
    const changed = h.users.changeRole(wallet.address, "Viewer");
    await h.sessions.apply({
      userId: user.id,
      address: wallet.address,
      role: "Viewer",
      version: changed.version,
      revoke: true,
      deleted: false,
    });
    const reads = h.users.reads;
    const claims = await h.claimsOf(await client(h).legacyLogin(wallet));
    expect(claims).toMatchObject({ role: "Viewer", [SESSION_VERSION_CLAIM]: changed.version });
    expect(h.users.reads).toBe(reads + 1);
  });

  it("an account that keeps changing under the sign-in: 503 after three reads, no token", async () => {
    const h = await authOnMemory();
    const wallet = newWallet();
    const user = h.users.seed(wallet.address, { version: 1 });
    // The session holds a version no read of the account reaches.
    await h.sessions.apply({
      userId: user.id,
      address: wallet.address,
      role: "Base",
      version: 9,
      revoke: false,
      deleted: false,
    });
    await expect(client(h).legacyLogin(wallet)).rejects.toMatchObject({
      kind: "unavailable",
      code: ErrorCode.SERVICE_UNAVAILABLE,
    });
    expect(h.users.reads).toBe(3);
  });
});
