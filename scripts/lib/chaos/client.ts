/**
 * The client side of a chaos run: requests to either gateway, counted in the report as they are answered;
 * sign-up and sign-in; and writes that carry an Idempotency-Key and are retried with it.
 */
import { randomBytes, randomInt } from "node:crypto";
import { randomWallet } from "@fundraise/contracts/testing";
import type { Wallet } from "ethers";
import type { System } from "../../../e2e/system.ts";
import { type ChaosReport, noteExample } from "./report.ts";
import { sleep } from "./util.ts";

/** Answers that say nothing was decided: the write is retried with its key. */
export const RETRYABLE = new Set([503, 504]);

export interface Answer {
  status: number;
  body: { data: unknown; success: boolean; message: string | null } | undefined;
  code?: string;
}

/** A simulated user: an address of its own, signed up and signed in. */
export interface Worker {
  ip: string;
  wallet: Wallet;
  userId: number;
  username: string;
  token: string;
}

export interface CallOptions {
  token?: string;
  body?: unknown;
  key?: string;
  gateway?: string;
  ip?: string;
}

export class ChaosClient {
  constructor(
    private readonly gateways: string[],
    private readonly report: ChaosReport,
  ) {}

  /** One request, to the given gateway or either at random; status 0 when no answer came. */
  async call(method: string, path: string, opts: CallOptions = {}): Promise<Answer> {
    const report = this.report;
    const headers: Record<string, string> = { "x-forwarded-for": opts.ip ?? "198.18.0.1" };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.body !== undefined) headers["content-type"] = "application/json";
    if (opts.key) headers["idempotency-key"] = opts.key;
    const base = opts.gateway ?? (this.gateways[randomInt(this.gateways.length)] as string);
    report.requests += 1;
    let res: Response;
    let text: string;
    try {
      res = await fetch(`${base}${path}`, {
        method,
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: AbortSignal.timeout(20_000),
      });
      text = await res.text();
    } catch {
      report.connectionErrors += 1;
      return { status: 0, body: undefined };
    }
    report.statuses[res.status] = (report.statuses[res.status] ?? 0) + 1;
    let body: Answer["body"];
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const keys = body && typeof body === "object" ? Object.keys(body).sort().join(",") : "";
    const enveloped =
      keys === "data,message,success" &&
      body?.success === res.status < 300 &&
      (res.status < 300 || (body?.data === null && typeof body?.message === "string"));
    if (!enveloped) {
      report.nonEnvelope += 1;
      noteExample(report, `non-envelope ${method} ${path} ${res.status} ${text.slice(0, 200)}`);
    }
    if (res.status >= 500 && !RETRYABLE.has(res.status)) {
      report.unexpected5xx += 1;
      noteExample(report, `${res.status} ${method} ${path} ${text.slice(0, 200)}`);
    }
    const code = (body as { code?: string } | undefined)?.code;
    return { status: res.status, body, ...(code ? { code } : {}) };
  }

  /** A fresh token, or null when a step was refused or unanswered. */
  async signIn(w: Pick<Worker, "wallet" | "ip">, gateway?: string): Promise<string | null> {
    const nonce = await this.call("GET", `/Authentication/GetNonce/${w.wallet.address}`, {
      ip: w.ip,
      gateway,
    });
    if (nonce.status !== 200) return null;
    const login = await this.call("POST", "/Authentication/Login", {
      ip: w.ip,
      gateway,
      body: {
        address: w.wallet.address,
        signedMessage: await w.wallet.signMessage(`LOGIN: ${nonce.body?.data}`),
      },
    });
    return login.status === 200 ? (login.body?.data as string) : null;
  }

  /**
   * A write with an Idempotency-Key, retried with the same key after an answer that says nothing was
   * decided (503, 504, 409 in use, no answer) and with a fresh token after a 401.
   */
  async write(w: Worker, method: string, path: string, body: unknown, deadline: number) {
    const key = `chaos-${randomBytes(8).toString("hex")}`;
    for (let attempt = 0; ; attempt++) {
      const res = await this.call(method, path, { token: w.token, body, key, ip: w.ip });
      const undecided =
        res.status === 0 || RETRYABLE.has(res.status) || res.code === "IDEMPOTENCY_KEY_IN_USE";
      if (res.status === 401) {
        const token = await this.signIn(w);
        if (token) w.token = token;
      } else if (!undecided) {
        return { res, key };
      }
      if (Date.now() > deadline || attempt > 40) return { res, key };
      await sleep(250 + attempt * 50);
    }
  }
}

/** Until `attempt` gives a value (setup, before any fault). */
async function until<T>(what: string, attempt: () => Promise<T | null>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await attempt();
    if (value !== null) return value;
    if (Date.now() > end) throw new Error(`${what}: no success within ${ms} ms`);
    await sleep(200);
  }
}

/** A new user with an address and a forwarded IP of its own: registered, its mail verified, signed in. */
export async function signUp(client: ChaosClient, mailbox: System["mailbox"], n: number): Promise<Worker> {
  const wallet = randomWallet();
  const ip = `198.${randomInt(18, 20)}.${randomInt(0, 256)}.${randomInt(1, 255)}`;
  const username = `chaos_${randomBytes(3).toString("hex")}_${n}`;
  const mailAddress = `${username}@example.org`;
  const res = await client.call("POST", "/Authentication/Register", {
    ip,
    body: {
      Name: "Chaos",
      Surname: "Monkey",
      Username: username,
      MailAddress: mailAddress,
      SignedMessage: await wallet.signMessage("REGISTER"),
    },
  });
  if (res.status !== 201) throw new Error(`sign-up: ${res.status} ${JSON.stringify(res.body)}`);
  const mail = await mailbox.next(mailAddress, 30_000);
  const link = /https?:\/\/\S+verify-email\?[^\s"<>]+/.exec(mail.text ?? "")?.[0] as string;
  const url = new URL(link.replaceAll("&amp;", "&"));
  const verified = await client.call("GET", `${url.pathname}${url.search}`, { ip });
  if (verified.status !== 200) throw new Error(`verify: ${verified.status}`);
  const token = await until("sign-in", () => client.signIn({ wallet, ip }));
  return { ip, wallet, userId: Number(res.body?.data), username, token };
}
