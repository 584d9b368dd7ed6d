import { createAmqpBus } from "@fundraise/bus";
import { ADMIN_ROLE, confirm, createProvider, registryAt } from "@fundraise/contracts";
import { ChainEvents } from "@fundraise/protocol";
import { silentLogger } from "@fundraise/service-kit";
import { Wallet } from "ethers";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployContractWallet } from "../services/auth/src/test/contract-wallet.ts";
import { createClient } from "./client.ts";
import { type System, startSystem } from "./system.ts";

// Sign-up and sign-in as a user does it, across users, auth and the gateway as separate processes,
// with real wallets, a real chain and a real SMTP server.
let sys: System;
beforeAll(async () => {
  // The gateway believes X-Forwarded-For here, so a test can call as several clients (per-IP limits).
  sys = await startSystem({ env: { TRUST_PROXY: "true" } });
});
afterAll(() => sys?.stop());

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
      // The wallet address, as behaviour.md §2 and the first implementation have it (not the surname).
      family_name: wallet.address,
    });
    const me = await api("GET", "/user/get", { token });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ id: userId, username, address: wallet.address, role: "Base" });
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
    const deployer = new Wallet(
      sys.anvil.accounts[1] as string,
      createProvider(sys.anvil.url, sys.anvil.chainId),
    );
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
    const admin = new Wallet(
      sys.anvil.accounts[0] as string,
      createProvider(sys.anvil.url, sys.anvil.chainId),
    );
    const registry = registryAt(sys.deployment.registry, admin);
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
    expect(res.body.success).toBe(false);
  });
});

describe("attacks are refused", () => {
  it("a replayed nonce", async () => {
    const { wallet } = await signedUpUser();
    const nonce = (await api("GET", `/Authentication/GetNonce/${wallet.address}`)).body.data;
    const body = { address: wallet.address, signedMessage: await wallet.signMessage(`LOGIN: ${nonce}`) };
    expect((await api("POST", "/Authentication/Login", { body })).status).toBe(200);
    expect((await api("POST", "/Authentication/Login", { body })).status).toBe(401);
  });

  it("a signature of another address", async () => {
    const { wallet } = await signedUpUser();
    const nonce = (await api("GET", `/Authentication/GetNonce/${wallet.address}`)).body.data;
    const other = newWallet();
    const res = await api("POST", "/Authentication/Login", {
      body: { address: wallet.address, signedMessage: await other.signMessage(`LOGIN: ${nonce}`) },
    });
    expect(res.status).toBe(401);
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
      expect((await api("GET", "/user/getall", { token: bad })).status).toBe(401);
    }
  });

  it("the token of a deleted user", async () => {
    const { wallet } = await signedUpUser();
    const token = await tokenOf(wallet);
    expect((await api("DELETE", "/user/delete", { token })).status).toBe(200);
    const until = Date.now() + 10_000;
    let status = 0;
    while (Date.now() < until && status !== 401) {
      status = (await api("GET", "/user/get", { token })).status;
      if (status !== 401) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(401);
  });

  it("the token of an admin demoted on chain (fact published as the chain indexer does)", async () => {
    const { wallet } = await signedUpUser();
    const chainAdmin = new Wallet(
      sys.anvil.accounts[0] as string,
      createProvider(sys.anvil.url, sys.anvil.chainId),
    );
    const registry = registryAt(sys.deployment.registry, chainAdmin);
    await confirm(registry.getFunction("grantRole")(ADMIN_ROLE, wallet.address));
    const token = await tokenOf(wallet);
    expect((await api("GET", "/user/getall", { token })).status).toBe(200);
    // The chain-indexer (its own issue) turns the registry's status event into this fact.
    const indexer = await createAmqpBus({
      url: sys.amqpUrl,
      service: "chain-indexer-stand-in",
      logger: silentLogger(),
    });
    try {
      await indexer.publish(ChainEvents.userStatusChanged, {
        origin: {
          chainId: 31337,
          txHash: `0x${"ab".repeat(32)}`,
          logIndex: 0,
          blockNumber: 1,
          blockHash: `0x${"cd".repeat(32)}`,
        },
        address: wallet.address,
        role: "Base",
      });
    } finally {
      await indexer.close();
    }
    const until = Date.now() + 10_000;
    let status = 0;
    while (Date.now() < until && status !== 403 && status !== 401) {
      status = (await api("GET", "/user/getall", { token })).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect([401, 403]).toContain(status);
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

describe("nobody can lock a user out, nobody can take a sign-up over (behaviour.md §7)", () => {
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
    const before = (await api("GET", "/user/learnusercount")).body.data;
    const wallet = newWallet();
    const sig = await wallet.signMessage("REGISTER");
    const big = "x".repeat(1_000_000);
    const cases: [string, string, unknown, number[]][] = [
      ["POST", "/Authentication/Register", {}, [400]],
      [
        "POST",
        "/Authentication/Register",
        { name: 5, surname: [], username: {}, mailAddress: true, signedMessage: sig },
        [400],
      ],
      [
        "POST",
        "/Authentication/Register",
        { name: "A", surname: "B", username: "ok_name", mailAddress: "not-an-email", signedMessage: sig },
        [400],
      ],
      [
        "POST",
        "/Authentication/Register",
        { name: "A", surname: "B", username: "a", mailAddress: "a@b.org", signedMessage: sig },
        [400],
      ],
      [
        "POST",
        "/Authentication/Register",
        { name: big, surname: "B", username: "ok_name", mailAddress: "a@b.org", signedMessage: sig },
        [400, 413],
      ],
      [
        "POST",
        "/Authentication/Register",
        { name: "A", surname: "B", username: "ok_name", mailAddress: "a@b.org", signedMessage: "0x1234" },
        [400, 401],
      ],
      ["POST", "/Authentication/Login", {}, [400, 401]],
      ["POST", "/Authentication/Login", { address: "0x123", signedMessage: "x" }, [400, 401]],
      ["POST", "/Authentication/Login", { address: wallet.address, signedMessage: big }, [400, 413]],
      ["GET", "/Authentication/GetNonce/not-an-address", undefined, [400]],
      ["GET", "/Authentication/verify-email?email=a@b.org&token=nope", undefined, [400]],
      ["GET", "/Authentication/verify-email", undefined, [400]],
    ];
    for (const [method, path, body, statuses] of cases) {
      const res = await api(method, path, { body });
      expect(statuses, `${method} ${path} ${JSON.stringify(body)?.slice(0, 80)} → ${res.status}`).toContain(
        res.status,
      );
      expect(res.body).toMatchObject({ success: false, data: null });
    }
    expect((await api("GET", "/user/learnusercount")).body.data).toBe(before);
  });
});
