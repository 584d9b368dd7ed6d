import { waitFor } from "@fundraise/bus/testing";
import { ADMIN_ROLE, confirm, createProvider, registryAt } from "@fundraise/contracts";
import { Wallet } from "ethers";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { deployContractWallet } from "../services/auth/src/test/contract-wallet.ts";
import { type Answer, createClient } from "./client.ts";
import { type SharedSystem, sharedSystem } from "./shared.ts";

// Sign-up and sign-in as a user does it, across users, auth and the gateway as separate processes,
// with real wallets, a real chain and a real SMTP server. The shared system's gateway believes
// X-Forwarded-For, so a test can call as several clients (per-IP limits).
let sys: SharedSystem;
beforeAll(async () => {
  sys = await sharedSystem();
});

/** The registry as this file's chain account (an admin of it) uses it. */
const chainAccount = () => new Wallet(sys.chainAdminKey, createProvider(sys.anvil.url, sys.anvil.chainId));

/** Login's one answer for an unknown address, a missing, used or expired nonce and a bad signature. */
const SIGN_IN_REFUSED = {
  data: null,
  success: false,
  message: "Sign-in failed: the address, nonce or signature is not valid.",
};
/** Login's answer for a right signature of a user who has not followed the mailed link yet. */
const NOT_VERIFIED = "Verify your e-mail first.";

/** The headers of an answer but those that differ per response. */
const comparableHeaders = (res: Answer) =>
  Object.fromEntries(
    [...res.headers].filter(
      ([name]) =>
        !["date", "x-request-id", "x-ratelimit-remaining", "x-ratelimit-reset", "content-length"].includes(
          name,
        ),
    ),
  );

const { api, newWallet, register, verifyFromMail, login, siweMessage, signedUpUser, tokenOf } = createClient(
  () => sys,
);

describe("sign-up and sign-in with a wallet", () => {
  it("register → mail → link → nonce → sign → login → JWT verified against the JWKS → /user/get", async () => {
    const { wallet, username, userId } = await signedUpUser();
    const token = await tokenOf(wallet);
    const jwks = createRemoteJWKSet(new URL(`${sys.gatewayUrl}/.well-known/jwks.json`));
    const { payload, protectedHeader } = await jwtVerify(token, jwks, {
      audience: "fundraise",
      issuer: "fundraise-auth",
    });
    expect(protectedHeader.kid).toBeTruthy();
    expect(payload).toMatchObject({
      sub: String(userId),
      unique_name: username,
      role: "Base",
      address: wallet.address,
      // The wallet address, as rules.md §2.13 and the first backend have it (not the surname).
      family_name: wallet.address,
    });
    const me = await api("GET", "/user/get", { token });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ id: userId, username, address: wallet.address, role: "Base" });
  });

  it("signs in with the web client's exact requests: GetNonce of a lower-case address, {Address, SignedMessage}", async () => {
    const { wallet, userId } = await signedUpUser();
    const lower = wallet.address.toLowerCase();
    const nonce = await api("GET", `/Authentication/GetNonce/${lower}`);
    expect(nonce.status).toBe(200);
    const res = await api("POST", "/Authentication/Login", {
      body: { Address: lower, SignedMessage: await wallet.signMessage(`LOGIN: ${nonce.body.data}`) },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const jwks = createRemoteJWKSet(new URL(`${sys.gatewayUrl}/.well-known/jwks.json`));
    const { payload } = await jwtVerify(res.body.data as string, jwks, {
      audience: "fundraise",
      issuer: "fundraise-auth",
    });
    // The token names the address in its EIP-55 form, whatever case the client sent.
    expect(payload).toMatchObject({ sub: String(userId), address: wallet.address, role: "Base" });
    const me = await api("GET", "/user/get", { authorization: `Bearer ${res.body.data}` });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ id: userId, address: wallet.address });

    // Again, the same way: this time the account may come from auth's copy (keyed by any case).
    const again = await api("GET", `/Authentication/GetNonce/${lower}`);
    const second = await api("POST", "/Authentication/Login", {
      body: { Address: lower, SignedMessage: await wallet.signMessage(`LOGIN: ${again.body.data}`) },
    });
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    const claims = (await jwtVerify(second.body.data as string, jwks, { audience: "fundraise" })).payload;
    expect(claims).toMatchObject({ sub: String(userId), address: wallet.address, role: "Base" });
  });

  it("signs in with a Sign-In with Ethereum message", async () => {
    const { wallet } = await signedUpUser();
    const message = await siweMessage(wallet.address);
    const res = await api("POST", "/Authentication/Login", {
      body: { address: wallet.address, signedMessage: await wallet.signMessage(message), message },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(typeof res.body.data).toBe("string");
  });

  it("signs up and in with a contract wallet (EIP-1271), its owner signing", async () => {
    const owner = newWallet();
    const deployer = chainAccount();
    const walletAddress = await deployContractWallet(deployer, deployer.provider as never, owner.address);
    const username = `safe${Date.now().toString(36)}`;
    const mailAddress = `${username}@example.org`;
    const registerMessage = await siweMessage(walletAddress);
    const registered = await api("POST", "/Authentication/Register", {
      body: {
        name: "Multi",
        surname: "Sig",
        username,
        mailAddress,
        signedMessage: await owner.signMessage(registerMessage),
        message: registerMessage,
      },
    });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    expect((await verifyFromMail(mailAddress)).status).toBe(200);
    const message = await siweMessage(walletAddress);
    const res = await api("POST", "/Authentication/Login", {
      body: { address: walletAddress, signedMessage: await owner.signMessage(message), message },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const me = await api("GET", "/user/get", { token: res.body.data as string });
    expect(me.body.data).toMatchObject({ address: walletAddress, username });
    // Someone else's signature is refused by the contract.
    const other = await siweMessage(walletAddress);
    const refused = await api("POST", "/Authentication/Login", {
      body: { address: walletAddress, signedMessage: await newWallet().signMessage(other), message: other },
    });
    expect(refused.status).toBe(401);
  });

  it("takes the role from the chain at login", async () => {
    const { wallet } = await signedUpUser();
    const registry = registryAt(sys.deployment.registry, chainAccount());
    await confirm(registry.getFunction("editUserStatus")(wallet.address, 1));
    const token = await tokenOf(wallet);
    const claims = JSON.parse(Buffer.from(token.split(".")[1] as string, "base64url").toString());
    expect(claims.role).toBe("Whitelist");
    expect((await api("GET", "/user/get", { token })).body.data).toMatchObject({ role: "Whitelist" });
  });

  it("refuses to sign in before the e-mail is verified", async () => {
    const wallet = newWallet();
    expect((await register(wallet)).res.status).toBe(201);
    const res = await login(wallet);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ data: null, success: false, message: NOT_VERIFIED });
  });
});

describe("attacks are refused", () => {
  it("a replayed nonce", async () => {
    const { wallet } = await signedUpUser();
    const nonce = (await api("GET", `/Authentication/GetNonce/${wallet.address}`)).body.data;
    const body = { address: wallet.address, signedMessage: await wallet.signMessage(`LOGIN: ${nonce}`) };
    const first = await api("POST", "/Authentication/Login", { body });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ success: true, message: null });
    // A token that works: the replay below is refused for the nonce, not because sign-in was broken.
    expect((await api("GET", "/user/get", { token: first.body.data as string })).status).toBe(200);
    const replayed = await api("POST", "/Authentication/Login", { body });
    expect(replayed.status).toBe(401);
    expect(replayed.body).toEqual(SIGN_IN_REFUSED);
  });

  it("a signature of another address", async () => {
    const { wallet } = await signedUpUser();
    const nonce = (await api("GET", `/Authentication/GetNonce/${wallet.address}`)).body.data;
    const other = newWallet();
    const res = await api("POST", "/Authentication/Login", {
      body: { address: wallet.address, signedMessage: await other.signMessage(`LOGIN: ${nonce}`) },
    });
    expect(res.status).toBe(401);
    // The same answer as for a replayed nonce or an unknown address: it does not say which (rules.md §2.11).
    expect(res.body).toEqual(SIGN_IN_REFUSED);
  });

  it("an unknown address, with the same answer as a bad signature", async () => {
    const stranger = newWallet();
    const res = await login(stranger);
    expect(res.status).toBe(401);
    expect(res.body).toEqual(SIGN_IN_REFUSED);
  });

  it("no enumeration: GetNonce answers a registered and an unregistered address alike", async () => {
    const { wallet } = await signedUpUser();
    const stranger = newWallet();
    const registered = await api("GET", `/Authentication/GetNonce/${wallet.address}`);
    const unregistered = await api("GET", `/Authentication/GetNonce/${stranger.address}`);
    for (const res of [registered, unregistered]) {
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(["data", "message", "success"]);
      expect(res.body).toMatchObject({ success: true, message: null });
      // A fresh random nonce, a non-negative 32-bit int of 8 to 10 digits.
      expect(String(res.body.data)).toMatch(/^[1-9][0-9]{7,9}$/);
      expect(res.body.data as number).toBeLessThan(2 ** 31);
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    }
    expect(registered.body.data).not.toBe(unregistered.body.data);
    // Every header alike but those that differ per response (time, request id, rate-limit counters, and
    // the length, as a nonce has 8 to 10 digits).
    expect(comparableHeaders(unregistered)).toEqual(comparableHeaders(registered));
  });

  it("`alg: none`, a tampered role claim and a token of another key", async () => {
    const { wallet } = await signedUpUser();
    const token = await tokenOf(wallet);
    const [, payload, signature] = token.split(".") as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString());
    const admin = Buffer.from(JSON.stringify({ ...claims, role: "Admin" })).toString("base64url");
    const none = `${Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url")}.${admin}.`;
    const tampered = `${token.split(".")[0]}.${admin}.${signature}`;
    const { createTestSigner } = await import("../services/gateway/src/test/harness.ts");
    const foreign = await (await createTestSigner()).sign({ userId: Number(claims.sub), role: "Admin" });
    for (const bad of [none, tampered, foreign]) {
      const res = await api("GET", "/user/getall", { token: bad });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ data: null, success: false, message: "The token is not valid." });
    }
  });

  it("the token of a deleted user", async () => {
    const { wallet } = await signedUpUser();
    const token = await tokenOf(wallet);
    expect((await api("DELETE", "/user/delete", { token })).status).toBe(200);
    // The session said "deleted" before the deletion answered: refused at once, no waiting.
    const last = await api("GET", "/user/get", { token });
    expect(last.status).toBe(401);
    expect(last.body).toEqual({ data: null, success: false, message: "This account no longer exists." });
  });

  it("the token of an admin demoted on chain: the indexer's fact reaches the session at once", async () => {
    const { wallet } = await signedUpUser();
    const registry = registryAt(sys.deployment.registry, chainAccount());
    await confirm(registry.getFunction("grantRole")(ADMIN_ROLE, wallet.address));
    const token = await tokenOf(wallet);
    expect((await api("GET", "/user/getall", { token })).status).toBe(200);
    // Revoked on chain: the running chain-indexer turns the registry's AdminChange into a status fact.
    await confirm(registry.getFunction("revokeRole")(ADMIN_ROLE, wallet.address));
    let last: Answer | undefined;
    await waitFor(
      async () => {
        last = await api("GET", "/user/getall", { token });
        return last.status !== 200;
      },
      10_000,
      "the demotion to reach the gateway",
    );
    // The current role decides at once (rules.md §2.14): signed in, not allowed. Only a deletion or an
    // admin's role change revokes older tokens; this one still signs the user in, as Base.
    expect(last?.status).toBe(403);
    expect(last?.body).toEqual({ data: null, success: false, message: "This needs the role Admin." });
    const me = await api("GET", "/user/get", { token });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ address: wallet.address, role: "Base" });
  });
});

/** A call from the client at `ip` (through X-Forwarded-For, which this system's gateway believes). */
async function from(ip: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${sys.gatewayUrl}${path}`, {
    method,
    headers: {
      "x-forwarded-for": ip,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { data: unknown; message: string | null } };
}

describe("nobody can lock a user out, nobody can take a sign-up over (rules.md §7.2, §7.3)", () => {
  it("another client's failed logins and nonces for the address leave the owner's sign-in working", async () => {
    const { wallet } = await signedUpUser();
    const attacker = "198.51.100.7";
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const forged = await newWallet().signMessage(`LOGIN: ${10_000_000 + i}`);
      statuses.push(
        (
          await from(attacker, "POST", "/Authentication/Login", {
            address: wallet.address,
            signedMessage: forged,
          })
        ).status,
      );
      statuses.push((await from(attacker, "GET", `/Authentication/GetNonce/${wallet.address}`)).status);
    }
    expect(statuses).toContain(429);
    // The owner, from another IP: GetNonce, sign, Login → 200 with a token.
    const owner = "198.51.100.8";
    const nonce = await from(owner, "GET", `/Authentication/GetNonce/${wallet.address}`);
    expect(nonce.status).toBe(200);
    const res = await from(owner, "POST", "/Authentication/Login", {
      address: wallet.address,
      signedMessage: await wallet.signMessage(`LOGIN: ${nonce.body.data}`),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(typeof res.body.data).toBe("string");
  });

  it("an earlier nonce still signs in after a later GetNonce", async () => {
    const { wallet } = await signedUpUser();
    const first = (await api("GET", `/Authentication/GetNonce/${wallet.address}`)).body.data;
    await api("GET", `/Authentication/GetNonce/${wallet.address}`);
    const res = await api("POST", "/Authentication/Login", {
      body: { address: wallet.address, signedMessage: await wallet.signMessage(`LOGIN: ${first}`) },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });

  it("a replayed `REGISTER` signature: other data 409, and `REGISTER: <nonce>` takes a squatted address back", async () => {
    const owner = newWallet();
    const signedMessage = await owner.signMessage("REGISTER");
    const stamp = Date.now().toString(36);
    const squat = {
      name: "Mallory",
      surname: "M",
      username: `squat${stamp}`,
      mailAddress: `squat${stamp}@example.org`,
      signedMessage,
    };
    // Someone who saw the owner's signature signs the address up first …
    const squatted = await from("198.51.100.9", "POST", "/Authentication/Register", squat);
    expect(squatted.status, JSON.stringify(squatted.body)).toBe(201);
    // … and cannot change that pending sign-up with other data.
    const changed = await from("198.51.100.9", "POST", "/Authentication/Register", {
      ...squat,
      mailAddress: `other${stamp}@example.org`,
    });
    expect(changed.status).toBe(409);
    // The owner signs up with a fresh nonce: a new user replaces the squatter's sign-up.
    const nonce = (await api("GET", `/Authentication/GetNonce/${owner.address}`)).body.data;
    const mailAddress = `owner${stamp}@example.org`;
    const mine = await api("POST", "/Authentication/Register", {
      body: {
        name: "Ada",
        surname: "Lovelace",
        username: `owner${stamp}`,
        mailAddress,
        signedMessage: await owner.signMessage(`REGISTER: ${nonce}`),
        message: `REGISTER: ${nonce}`,
      },
    });
    expect(mine.status, JSON.stringify(mine.body)).toBe(201);
    expect(mine.body.data).not.toBe(squatted.body.data);
    expect((await verifyFromMail(mailAddress)).status).toBe(200);
    const token = await tokenOf(owner);
    expect((await api("GET", "/user/get", { token })).body.data).toMatchObject({ username: `owner${stamp}` });
  });
});

describe("bad input gets a 4xx envelope and writes nothing", () => {
  it("on every sign-up and sign-in endpoint", async () => {
    // An admin's list of every user, verified or not, is what a bad sign-up would change.
    const admin = await signedUpUser();
    await confirm(
      registryAt(sys.deployment.registry, chainAccount()).getFunction("grantRole")(
        ADMIN_ROLE,
        admin.wallet.address,
      ),
    );
    const adminToken = await tokenOf(admin.wallet);
    const allUsers = async () => {
      const res = await api("GET", "/user/getall", { token: adminToken });
      expect(res.status).toBe(200);
      return res.body.data as { address: string; username: string; mailAddress: string | null }[];
    };
    // The measure sees an unverified sign-up (a control: the same list without it would prove nothing).
    const control = newWallet();
    const controlSignUp = await register(control);
    expect(controlSignUp.res.status).toBe(201);
    expect((await allUsers()).map((u) => u.address)).toContain(control.address);

    const wallet = newWallet();
    const sig = await wallet.signMessage("REGISTER");
    // Under the gateway's 1 MiB body limit: a field too long (400). Over it: the body is too large (413).
    const long = "x".repeat(1_000_000);
    const huge = "x".repeat(1_100_000);
    const tooLarge = "The request body is too large.";
    const username = `bad_${control.address.slice(2, 10).toLowerCase()}`;
    const mailAddress = `${username}@example.org`;
    const valid = { name: "A", surname: "B", username, mailAddress, signedMessage: sig };
    const cases: [string, string, unknown, number, string?][] = [
      ["POST", "/Authentication/Register", {}, 400],
      [
        "POST",
        "/Authentication/Register",
        { name: 5, surname: [], username: {}, mailAddress: true, signedMessage: sig },
        400,
      ],
      ["POST", "/Authentication/Register", { ...valid, mailAddress: "not-an-email" }, 400],
      ["POST", "/Authentication/Register", { ...valid, username: "a" }, 400],
      ["POST", "/Authentication/Register", { ...valid, name: long }, 400],
      ["POST", "/Authentication/Register", { ...valid, name: huge }, 413, tooLarge],
      [
        "POST",
        "/Authentication/Register",
        { ...valid, signedMessage: "0x1234" },
        400,
        "The signature or the signed message is not valid.",
      ],
      ["POST", "/Authentication/Login", {}, 400],
      ["POST", "/Authentication/Login", { address: "0x123", signedMessage: "x" }, 400],
      ["POST", "/Authentication/Login", { address: wallet.address, signedMessage: long }, 400],
      ["POST", "/Authentication/Login", { address: wallet.address, signedMessage: huge }, 413, tooLarge],
      ["GET", "/Authentication/GetNonce/not-an-address", undefined, 400],
      [
        "GET",
        `/Authentication/verify-email?email=${encodeURIComponent(controlSignUp.mailAddress)}&token=nope`,
        undefined,
        400,
        "This verification link is not valid.",
      ],
      ["GET", "/Authentication/verify-email", undefined, 400],
    ];
    for (const [method, path, body, status, message] of cases) {
      const res = await api(method, path, { body });
      const what = `${method} ${path} ${JSON.stringify(body)?.slice(0, 80)} → ${res.status} ${res.body.message}`;
      expect(res.status, what).toBe(status);
      expect(res.body, what).toEqual({ data: null, success: false, message: message ?? expect.any(String) });
    }
    // Nobody signed up with the bad data.
    const after = await allUsers();
    expect(after.filter((u) => u.address === wallet.address || u.username === username)).toEqual([]);
    expect(after.filter((u) => u.mailAddress === mailAddress || u.mailAddress === "not-an-email")).toEqual(
      [],
    );
    // The wrong token changed nothing: the control is still unverified, and its own link still works.
    expect((await login(control)).status).toBe(403);
    expect((await verifyFromMail(controlSignUp.mailAddress)).status).toBe(200);
  });
});
