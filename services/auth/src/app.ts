import { checkChainId, createChainClient, loadDeployment } from "@fundraise/contracts";
import { createRpcAnswers } from "@fundraise/outbox";
import { UsersRpc } from "@fundraise/protocol";
import {
  type AppDeps,
  openAppDatabase,
  processMetrics,
  type ServiceApp,
  watchRedis,
} from "@fundraise/service-kit";
import { Redis } from "ioredis";
import { createChainReader } from "./chain/chain.ts";
import type { AuthConfig } from "./config.ts";
import { migrations } from "./db/migrations/index.ts";
import { AUTH_SCHEMA } from "./db/schema.ts";
import { createKeyStore, type KeyStore } from "./keys/key-store.ts";
import { SigningKey } from "./keys/signing-key.entity.ts";
import { createTokenIssuer } from "./keys/token-issuer.ts";
import { createMailer } from "./mail/mailer.ts";
import { serveAuthRpc } from "./rpc/index.ts";
import { type AccountChanges, createAccountChanges } from "./sessions/account-changes.ts";
import { createSessionStore } from "./sessions/session-store.ts";
import { createAccountCopy } from "./sign-in/account-copy.ts";
import { createNonceStore } from "./sign-in/nonce-store.ts";
import { createRateLimiter } from "./sign-in/rate-limiter.ts";
import { createSignInService, type SignInService } from "./sign-in/sign-in.service.ts";
import { EmailVerification } from "./sign-up/email-verification.entity.ts";
import { createSignUpRepository } from "./sign-up/sign-up.repository.ts";
import { createSignUpService, type SignUpService } from "./sign-up/sign-up.service.ts";
import { createSignedMessageVerifier } from "./signatures/signed-message.ts";
import { CONSUMER, subscribeAuth } from "./subscribers/index.ts";

export interface AuthApp extends ServiceApp {
  signIn: SignInService;
  signUp: SignUpService;
  keys: KeyStore;
  /** The consumed events' use cases, also reachable without the bus (tests drive duplicates through them). */
  accounts: AccountChanges;
}

const MAINTENANCE_INTERVAL_MS = 3_600_000;
/** Verification rows stay this long past their expiry (a used link still answers 200 meanwhile). */
const VERIFICATION_RETENTION_MS = 30 * 86_400_000;

/** Composition root: the only place that sees every dependency of the auth service. */
export async function startAuthApp(deps: AppDeps<AuthConfig>): Promise<AuthApp> {
  const { config, log, bus, shutdown } = deps;
  const deployment = loadDeployment(config.chain.deploymentFile);
  const { orm, outbox, pool } = await openAppDatabase(deps, {
    schema: AUTH_SCHEMA,
    entities: [SigningKey, EmailVerification],
    migrations,
  });
  // A keyed sign-in or sign-up retried after its reply was lost gets its first answer (ADR 0029).
  bus.keepAnswers(createRpcAnswers(pool, { schema: AUTH_SCHEMA, logger: log }));
  const em = () => orm.em.fork();

  // Auto-pipelining: the commands of one event-loop turn go out in one write; one write per command was
  // the largest single cost of a sign-in here (docs/adr/0011-sign-in-throughput.md).
  const redis = new Redis(config.redis.url, {
    maxRetriesPerRequest: 1,
    connectTimeout: 5_000,
    enableAutoPipelining: true,
  });
  // One line per burst of failed attempts while Redis is away, not one per attempt.
  watchRedis(redis, { log, url: config.redis.url });
  processMetrics().observeRedis(redis);
  shutdown.add("redis", async () => {
    await redis.quit().catch(() => redis.disconnect());
  });

  const chainClient = createChainClient(config.chain);
  shutdown.add("chain", () => chainClient.close());
  // An unreachable chain does not stop the service: logins answer 503 until it is back.
  await checkChainId(chainClient, deployment.chainId, (err) =>
    log.warn(
      { err, chainRpcUrl: config.chain.url },
      "the chain is unreachable; sign-in answers 503 until it is back",
    ),
  );
  const chain = createChainReader(chainClient, deployment);

  const mailer = createMailer({ ...config.mail, log });
  shutdown.add("mailer", () => mailer.close());

  const keys = createKeyStore({
    em,
    log,
    rotationDays: config.keys.rotationDays,
    tokenTtlSeconds: config.jwt.ttlSeconds,
  });
  await keys.ensureCurrent();

  const sessions = createSessionStore({
    redis,
    prefix: config.redis.prefix,
    tokenTtlSeconds: config.jwt.ttlSeconds,
    pool,
  });
  // Login and register check signed messages (legacy texts, EIP-4361, EIP-1271) and consume nonces alike.
  const nonces = createNonceStore(redis, config.redis.prefix, {
    ttlSeconds: config.signIn.nonceTtlSeconds,
    maxPerAddress: config.signIn.noncesPerAddress,
  });
  const verifySignedMessage = createSignedMessageVerifier({
    nonces,
    chain,
    settings: {
      publicBaseUrl: config.publicBaseUrl,
      siweDomain: config.signIn.siweDomain,
      nonceTtlSeconds: config.signIn.nonceTtlSeconds,
      clockSkewSeconds: config.signIn.clockSkewSeconds,
      legacyMessages: config.signIn.legacyMessages,
    },
  });
  const rateLimiter = createRateLimiter(redis, config.redis.prefix);
  const accounts = createAccountCopy({
    redis,
    prefix: config.redis.prefix,
    ttlSeconds: config.signIn.accountCopyTtlSeconds,
    fetch: (address, ctx) => bus.call(UsersRpc.byAddress, { address }, ctx),
  });
  const signIn = createSignInService({
    bus,
    accounts,
    nonces,
    rateLimiter,
    chain,
    tokens: createTokenIssuer({
      keys,
      issuer: config.jwt.issuer,
      audience: config.jwt.audience,
      ttlSeconds: config.jwt.ttlSeconds,
    }),
    sessions,
    verifySignedMessage,
    limits: config.rateLimits,
  });
  const signUp = createSignUpService({
    bus,
    verifications: createSignUpRepository(em),
    rateLimiter,
    mailer,
    verifySignedMessage,
    settings: {
      publicBaseUrl: config.publicBaseUrl,
      verificationTtlHours: config.verification.ttlHours,
      limits: config.rateLimits,
    },
  });
  // Hourly: rotate the signing key when due, and forget verification links long expired.
  const maintenance = setInterval(() => {
    keys.ensureCurrent().catch((err: unknown) => log.error({ err }, "signing key check failed"));
    signUp
      .pruneExpired(new Date(Date.now() - VERIFICATION_RETENTION_MS))
      .catch((err: unknown) => log.warn({ err }, "pruning verification links failed"));
  }, MAINTENANCE_INTERVAL_MS);
  maintenance.unref();
  shutdown.add("maintenance", () => clearInterval(maintenance));
  const changes = createAccountChanges({ sessions, accounts, signUp, consumer: CONSUMER });
  await serveAuthRpc(bus, { signIn, signUp, keys, sessions, accounts: changes });
  await subscribeAuth(bus, changes);
  log.info({ chainId: deployment.chainId, registry: deployment.registry }, "auth service ready");
  return { signIn, signUp, keys, accounts: changes, outbox };
}
