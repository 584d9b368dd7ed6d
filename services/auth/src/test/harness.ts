import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AmqpBus, createAmqpBus } from "@fundraise/bus";
import { createTestVhost, type TestVhost } from "@fundraise/bus/testing";
import { writeDeployment } from "@fundraise/contracts";
import {
  type AnvilInstance,
  deployFresh,
  type FreshDeployment,
  startAnvil,
} from "@fundraise/contracts/testing";
import { AuthRpc, type UserRole } from "@fundraise/protocol";
import { type Logger, silentLogger } from "@fundraise/service-kit";
import { createTestDatabase, type TestDatabase } from "@fundraise/service-kit/testing";
import { type HDNodeWallet, Wallet } from "ethers";
import { Redis } from "ioredis";
import { createLocalJWKSet, jwtVerify } from "jose";
import pg from "pg";
import { type AuthApp, startAuthApp } from "../app.ts";
import { type AuthConfig, loadConfig } from "../config.ts";
import { formatSiweMessage } from "../signatures/siwe.ts";
import { startTestSmtpServer, type TestSmtpServer } from "./smtp.ts";
import { serveUsersStandIn, type UsersStandIn } from "./users-stand-in.ts";

export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
export const PUBLIC_BASE_URL = "http://localhost:8080";

/**
 * The auth service on the real servers, isolated per test file: its own Postgres database, RabbitMQ
 * vhost, Redis key prefix, anvil chain (with the platform deployed by `deployFresh`) and SMTP server, plus
 * the users service stand-in on the same bus and a client bus that calls like the gateway does.
 */
export interface Harness {
  config: AuthConfig;
  app: AuthApp;
  client: AmqpBus;
  users: UsersStandIn;
  redis: Redis;
  prefix: string;
  sql: pg.Client;
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
  const [db, vhost, anvil, smtp, dir] = await Promise.all([
    createTestDatabase("auth"),
    createTestVhost("auth"),
    startAnvil(),
    startTestSmtpServer(),
    mkdtemp(join(tmpdir(), "auth-test-")),
  ]);
  const resources: { db: TestDatabase; vhost: TestVhost } = { db, vhost };
  const chain = await deployFresh(anvil.url);
  const deploymentFile = join(dir, "deployment.json");
  writeDeployment(deploymentFile, chain.deployment);

  const log = silentLogger();
  const usersBus = await createAmqpBus({ url: vhost.url, service: "users", logger: log, journal: false });
  const users = await serveUsersStandIn(usersBus);
  const authBus = await createAmqpBus({ url: vhost.url, service: "auth", logger: log, journal: false });
  const client = await createAmqpBus({ url: vhost.url, service: "test-client", logger: log, journal: false });
  const config = loadConfig({
    DATABASE_URL: db.url,
    AMQP_URL: vhost.url,
    REDIS_URL,
    REDIS_PREFIX: prefix,
    LOG_LEVEL: "silent",
    CHAIN_RPC_URL: anvil.url,
    CHAIN_DEPLOYMENT_FILE: deploymentFile,
    CHAIN_TIMEOUT_MS: "2000",
    SMTP_URL: smtp.url,
    MAIL_DIR: join(dir, "mail"),
    PUBLIC_BASE_URL,
    ...env,
  });
  const app = await startAuthApp({ config, log: options.log ?? log, bus: authBus });
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const sql = new pg.Client({ connectionString: db.url });
  await sql.connect();

  return {
    config,
    app,
    client,
    users,
    redis,
    prefix,
    sql,
    smtp,
    anvil,
    chain,
    async close() {
      await app.stopRelay();
      await Promise.all([client.close(), authBus.close(), usersBus.close()]);
      await app.stop();
      await sql.end();
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
      await Promise.all([smtp.close(), anvil.stop(), rm(dir, { recursive: true, force: true })]);
      await Promise.all([resources.db.dispose(), resources.vhost.dispose()]);
    },
  };
}

export const origin = { ip: "127.0.0.1" };

/** A fresh wallet per test: rate limits and nonces of one test never touch another's. */
export const newWallet = (): HDNodeWallet => Wallet.createRandom();

/** GetNonce then a legacy `LOGIN: <nonce>` signature, as the existing web client does. */
export async function legacyLogin(h: Harness, wallet: HDNodeWallet): Promise<string> {
  const nonce = await h.client.call(AuthRpc.nonce, { address: wallet.address, origin });
  const signedMessage = await wallet.signMessage(`LOGIN: ${nonce}`);
  return h.client.call(AuthRpc.login, { login: { address: wallet.address, signedMessage }, origin });
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
