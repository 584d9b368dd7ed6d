/**
 * What a web client does against the running system: calls in the envelope, sign-up with the mailed
 * link, sign-in with a signed nonce. `system()` is read per call, so one client serves a whole file.
 *
 * Each client is a client of its own on a shared system: it calls from an address of its own (sent as
 * X-Forwarded-For, which the shared system's gateway believes) and its usernames carry a tag of its own.
 */
import { randomBytes, randomInt } from "node:crypto";
import { randomWallet } from "@fundraise/contracts/testing";
import { expect } from "vitest";
import type { RunningSystem } from "./system.ts";

export interface Signer {
  address: string;
  signMessage(message: string): Promise<string>;
}

export interface Answer {
  status: number;
  headers: Headers;
  body: { data: unknown; success: boolean; message: string | null };
}

export function createClient(system: () => RunningSystem) {
  // 198.18.0.0/15 is for benchmarks and tests (RFC 2544): never a real client.
  const ip = `198.${randomInt(18, 20)}.${randomInt(0, 256)}.${randomInt(1, 255)}`;
  const tag = randomBytes(3).toString("hex");

  async function api(
    method: string,
    path: string,
    options: {
      token?: string;
      body?: unknown;
      raw?: string;
      authorization?: string;
      /** The base URL of the gateway replica to call (one of `gatewayUrls`); the system's first by default. */
      gateway?: string;
    } = {},
  ): Promise<Answer> {
    const headers: Record<string, string> = { "x-forwarded-for": ip };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    // The header exactly as given, e.g. the web client's `Bearer undefined` when it has no token.
    if (options.authorization !== undefined) headers.authorization = options.authorization;
    if (options.body !== undefined || options.raw !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`${options.gateway ?? system().gatewayUrl}${path}`, {
      method,
      headers,
      body: options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Answer["body"] };
  }

  let counter = 0;
  const newWallet = () => randomWallet();

  async function register(wallet: Signer, name = `user_${tag}_${++counter}`) {
    const mailAddress = `${name}@example.org`;
    const res = await api("POST", "/Authentication/Register", {
      body: {
        Name: "Ada",
        Surname: "Lovelace",
        Username: name,
        MailAddress: mailAddress,
        SignedMessage: await wallet.signMessage("REGISTER"),
      },
    });
    return { res, mailAddress, username: name };
  }

  async function verifyFromMail(mailAddress: string) {
    const mail = await system().mailbox.next(mailAddress);
    const link = /https?:\/\/\S+verify-email\?[^\s"<>]+/.exec(mail.text ?? "")?.[0];
    expect(link, mail.text).toBeDefined();
    const url = new URL((link as string).replaceAll("&amp;", "&"));
    return api("GET", `${url.pathname}${url.search}`);
  }

  async function login(wallet: Signer) {
    const nonce = await api("GET", `/Authentication/GetNonce/${wallet.address}`);
    expect(nonce.status).toBe(200);
    return api("POST", "/Authentication/Login", {
      body: { address: wallet.address, signedMessage: await wallet.signMessage(`LOGIN: ${nonce.body.data}`) },
    });
  }

  /** An EIP-4361 message for the running system, with a fresh nonce from GetNonce. */
  async function siweMessage(address: string) {
    const nonce = (await api("GET", `/Authentication/GetNonce/${address}`)).body.data;
    return [
      `${new URL(system().gatewayUrl).host} wants you to sign in with your Ethereum account:`,
      address,
      "",
      "Sign in to the fundraising platform.",
      "",
      `URI: ${system().gatewayUrl}`,
      "Version: 1",
      `Chain ID: ${system().deployment.chainId}`,
      `Nonce: ${nonce}`,
      `Issued At: ${new Date().toISOString()}`,
    ].join("\n");
  }

  async function signedUpUser() {
    const wallet = newWallet();
    const { res, mailAddress, username } = await register(wallet);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect((await verifyFromMail(mailAddress)).status).toBe(200);
    return { wallet, mailAddress, username, userId: Number(res.body.data) };
  }

  async function tokenOf(wallet: Signer) {
    const res = await login(wallet);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data as string;
  }

  return { ip, api, newWallet, register, verifyFromMail, login, siweMessage, signedUpUser, tokenOf };
}
