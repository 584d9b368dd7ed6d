import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AmqpBus, Bus } from "@fundraise/bus";
import { writeDeployment } from "@fundraise/contracts";
import {
  type AnvilInstance,
  deployFresh,
  type FreshDeployment,
  randomWallet,
  startAnvil,
} from "@fundraise/contracts/testing";
import {
  AuthRpc,
  type RequestOf,
  type RpcDescriptor,
  type UserAccount,
  type UserRole,
  UsersRpc,
} from "@fundraise/protocol";
import type { Logger } from "@fundraise/service-kit";
import { startServiceHarness } from "@fundraise/service-kit/testing";
import { startUsersApp } from "@fundraise/users/src/app.ts";
import { loadConfig as loadUsersConfig } from "@fundraise/users/src/config.ts";
import { getAddress, type Wallet } from "ethers";
import { Redis } from "ioredis";
import { createLocalJWKSet, jwtVerify } from "jose";
import type pg from "pg";
import type { Static } from "typebox";
import { type AuthApp, startAuthApp } from "../app.ts";
import { type AuthConfig, loadConfig } from "../config.ts";
import { formatSiweMessage } from "../signatures/siwe.ts";
import { startTestSmtpServer, type TestSmtpServer } from "./smtp.ts";

export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
export const PUBLIC_BASE_URL = "http://localhost:8080";

type Account = Static<typeof UserAccount>;

/** The real users service, started beside the auth service on the same vhost, with its own database. */
export interface UsersService {
  /** SQL on the database (the users service's schema `users`), to look at what it stored. */
  sql: pg.Pool;
  /** Every request of this RPC the users service answered, oldest first (recorded, then served). */
  requests<D extends RpcDescriptor>(descriptor: D): RequestOf<D>[];
  /**
   * Runs `meanwhile` once, the next time the users service has its answer to this RPC ready, before the
   * answer leaves: something that happens while the answer travels.
   */
  beforeNextAnswer<D extends RpcDescriptor>(descriptor: D, meanwhile: () => Promise<void>): void;
  /**
   * A user created the way sign-up creates one, through the users service's RPCs: `register`, then
   * `mark-verified` unless `isVerified` is false.
   */
  seed(user: {
    address: string;
    username?: string;
    name?: string;
    surname?: string;
    mailAddress?: string;
    isVerified?: boolean;
  }): Promise<Account>;
  /** The account as the users service answers it (`users.user.by-address`). */
  byAddress(address: string): Promise<Account | null>;
}

/**
 * The auth service on the real servers, isolated per test file (service-kit `startServiceHarness`: one
 * database, each service in its own schema, one vhost): its own Redis key prefix, anvil chain (with the
 * platform deployed by `deployFresh`) and SMTP server, plus the real users service and a client bus that
 * calls like the gateway does.
 */
export interface Harness {
  config: AuthConfig;
  app: AuthApp;
  client: AmqpBus;
  users: UsersService;
  redis: Redis;
  prefix: string;
  /** SQL on the database (both services' schemas). */
  sql: pg.Pool;
  smtp: TestSmtpServer;
  anvil: AnvilInstance;
  chain: FreshDeployment;
  close(): Promise<void>;
}

export async function startHarness(
  env: Record<string, string> = {},
  options: { log?: Logger } = {},
): Promise<Harness> {
  const prefix = `test:auth:${randomBytes(6).toString("hex")}:`;
  const [anvil, smtp, dir] = await Promise.all([
    startAnvil(),
    startTestSmtpServer(),
    mkdtemp(join(tmpdir(), "auth-test-")),
  ]);
  const chain = await deployFresh(anvil.url);
  const deploymentFile = join(dir, "deployment.json");
  writeDeployment(deploymentFile, chain.deployment);

  const calls: Calls = { seen: {}, meanwhile: {} };
  let config: AuthConfig | undefined;
  const h = await startServiceHarness({
    label: "auth",
    services: [
      {
        name: "users",
        start: ({ env: base, bus, ...deps }) =>
          startUsersApp({ config: loadUsersConfig(base), bus: recordingCalls(bus, calls), ...deps }),
      },
      {
        name: "auth",
        start({ env: base, ...deps }) {
          config = loadConfig({
            ...base,
            REDIS_URL,
            REDIS_PREFIX: prefix,
            CHAIN_RPC_URL: anvil.url,
            CHAIN_DEPLOYMENT_FILE: deploymentFile,
            CHAIN_TIMEOUT_MS: "2000",
            SMTP_URL: smtp.url,
            MAIL_DIR: join(dir, "mail"),
            PUBLIC_BASE_URL,
            // Most tests call from one client IP (`origin`): per-IP limits are out of their way. The tests of
            // the limits set their own values and call from IPs of their own.
            NONCE_PER_IP_PER_MINUTE: "100000",
            LOGIN_FAILURES_PER_IP_PER_MINUTE: "100000",
            REGISTER_PER_IP_PER_HOUR: "100000",
            ...env,
          });
          return startAuthApp({ config, ...deps, ...(options.log ? { log: options.log } : {}) });
        },
      },
    ],
    record: {},
  });
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });

  return {
    config: config as AuthConfig,
    app: h.apps[1] as AuthApp,
    client: h.client,
    users: usersService(h.client, h.sql, calls),
    redis,
    prefix,
    sql: h.sql,
    smtp,
    anvil,
    chain,
    async close() {
      await h.stop();
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
      await Promise.all([smtp.close(), anvil.stop(), rm(dir, { recursive: true, force: true })]);
    },
  };
}

interface Calls {
  seen: Record<string, unknown[]>;
  meanwhile: Record<string, () => Promise<void>>;
}

/** The bus as the users service sees it, recording each request it serves before answering it. */
function recordingCalls(bus: Bus, calls: Calls): Bus {
  return new Proxy(bus, {
    get(target, property, receiver) {
      if (property === "serve") {
        const serve: Bus["serve"] = (descriptor, handler) =>
          target.serve(descriptor, async (request, ctx) => {
            const seen = calls.seen[descriptor.name] ?? [];
            seen.push(request);
            calls.seen[descriptor.name] = seen;
            const answer = await handler(request, ctx);
            const meanwhile = calls.meanwhile[descriptor.name];
            delete calls.meanwhile[descriptor.name];
            await meanwhile?.();
            return answer;
          });
        return serve;
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

let seeded = 0;

function usersService(client: Bus, sql: pg.Pool, calls: Calls): UsersService {
  return {
    sql,
    requests: <D extends RpcDescriptor>(descriptor: D) =>
      (calls.seen[descriptor.name] ?? []) as RequestOf<D>[],
    beforeNextAnswer(descriptor, meanwhile) {
      calls.meanwhile[descriptor.name] = meanwhile;
    },
    async seed(user) {
      seeded += 1;
      const username = user.username ?? `user${seeded}_${randomBytes(3).toString("hex")}`;
      const mailAddress = user.mailAddress ?? `${username}@example.org`;
      const { userId } = await client.call(UsersRpc.register, {
        address: getAddress(user.address),
        name: user.name ?? "Test",
        surname: user.surname ?? `Surname${seeded}`,
        username,
        mailAddress,
        pendingUntil: new Date(Date.now() + 3_600_000).toISOString(),
        proof: "nonce",
      });
      if (user.isVerified !== false) await client.call(UsersRpc.markVerified, { userId, mailAddress });
      const account = await client.call(UsersRpc.byAddress, { address: getAddress(user.address) });
      if (!account) throw new Error(`seeded user ${userId} not found`);
      return account;
    },
    byAddress: (address) => client.call(UsersRpc.byAddress, { address: getAddress(address) }),
  };
}

/** The client IP the gateway passes on; tests of per-IP limits use others. */
export const origin = { ip: "127.0.0.1" };

/** A fresh wallet per test: rate limits and nonces of one test never touch another's. */
export const newWallet = (): Wallet => randomWallet();

let ipCounter = 0;
/** A client IP no other test of the run uses (TEST-NET-3 and a documentation IPv6 prefix). */
export const newOrigin = (): { ip: string } => {
  ipCounter += 1;
  return ipCounter % 2 === 0
    ? { ip: `203.0.${Math.floor(ipCounter / 250) % 256}.${ipCounter % 250}` }
    : { ip: `2001:db8::${ipCounter.toString(16)}` };
};

/** GetNonce then a legacy `LOGIN: <nonce>` signature, as the existing web client does (no `message`). */
export async function legacyLogin(h: Harness, wallet: Wallet, from = origin): Promise<string> {
  const nonce = await h.client.call(AuthRpc.nonce, { address: wallet.address, origin: from });
  const signedMessage = await wallet.signMessage(`LOGIN: ${nonce}`);
  return h.client.call(AuthRpc.login, { login: { address: wallet.address, signedMessage }, origin: from });
}

/** An EIP-4361 message valid for the harness's deployment; override any field to break one check. */
export function siweMessage(
  h: Harness,
  address: string,
  nonce: number | string,
  overrides: Partial<Parameters<typeof formatSiweMessage>[0]> = {},
): string {
  return formatSiweMessage({
    domain: new URL(PUBLIC_BASE_URL).host,
    address,
    statement: "Sign in to Fundraise.",
    uri: `${PUBLIC_BASE_URL}/login`,
    chainId: h.chain.deployment.chainId,
    nonce: String(nonce),
    issuedAt: new Date(),
    ...overrides,
  });
}

export interface TokenClaims {
  sub: string;
  nameid: string;
  unique_name: string;
  role: UserRole;
  family_name: string;
  address: string;
  iss: string;
  aud: string;
  iat: number;
  exp: number;
  jti: string;
  /** The account version the token was issued at. */
  sv: number;
}

/** Verifies a token as the gateway does: jose against the JWKS from AuthRpc.jwks, iss and aud checked. */
export async function verifyToken(h: Harness, token: string): Promise<{ claims: TokenClaims; kid: string }> {
  const jwks = await h.client.call(AuthRpc.jwks, {});
  const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks as never), {
    issuer: "fundraise-auth",
    audience: "fundraise",
    algorithms: ["ES256", "EdDSA"],
  });
  return { claims: payload as unknown as TokenClaims, kid: protectedHeader.kid ?? "" };
}

/** The call's failure as { kind, code, message } (or a failure of the test when it succeeded). */
export async function failureOf(
  promise: Promise<unknown>,
): Promise<{ kind: string; code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    const e = error as { kind: string; code: string; message: string };
    return { kind: e.kind, code: e.code, message: e.message };
  }
  throw new Error("expected the call to fail");
}
