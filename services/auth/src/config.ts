import { resolve } from "node:path";
import {
  ChainEnv,
  ConfigError,
  chainSection,
  JwtEnv,
  loadEnv,
  PublicUrlEnv,
  RedisEnv,
  redisSection,
  ServiceEnv,
  serviceSections,
} from "@fundraise/service-kit";
import Type from "typebox";

/** The auth service's environment: service-kit's fragments (shared with the gateway too) and its own. */
export const AuthEnv = {
  ...ServiceEnv,
  ...RedisEnv,
  ...ChainEnv,
  ...PublicUrlEnv,
  ...JwtEnv,
  SMTP_URL: Type.String({
    default: "",
    pattern: "^(smtps?://.*)?$",
    description:
      "mail server (smtp://user:pass@host:port or smtps://); unset: mail is written as .eml files to MAIL_DIR",
  }),
  MAIL_DIR: Type.String({
    default: ".local/mail",
    description: "where verification mail is written as .eml files when SMTP_URL is unset",
  }),
  MAIL_FROM: Type.String({
    default: "Fundraise <no-reply@localhost>",
    minLength: 3,
    description: "sender of verification mail",
  }),
  TOKEN_TTL_SECONDS: Type.Integer({
    default: 7200,
    minimum: 5,
    maximum: 604_800,
    description:
      "lifetime of an access token (seconds); under 60 only for tests (expiry on a running system)",
  }),
  VERIFICATION_TTL_HOURS: Type.Number({
    default: 24,
    exclusiveMinimum: 0,
    maximum: 720,
    description:
      "lifetime of an e-mail verification link (hours); an unverified sign-up blocks its data this long",
  }),
  NONCE_TTL_SECONDS: Type.Integer({
    default: 300,
    minimum: 10,
    maximum: 3600,
    description: "lifetime of a GetNonce nonce (seconds); also the oldest accepted SIWE Issued At",
  }),
  LEGACY_MESSAGES: Type.Boolean({
    default: true,
    description:
      "accept the legacy signed texts `LOGIN: <nonce>`, `REGISTER` and `REGISTER: <nonce>` besides EIP-4361",
  }),
  SIWE_DOMAIN: Type.String({
    default: "",
    description: "the domain EIP-4361 messages must name; empty: the host of PUBLIC_BASE_URL",
  }),
  SIWE_CLOCK_SKEW_SECONDS: Type.Integer({
    default: 60,
    minimum: 0,
    maximum: 600,
    description: "tolerated clock difference for EIP-4361 Issued At, Expiration Time and Not Before",
  }),
  KEY_ROTATION_DAYS: Type.Number({
    default: 30,
    exclusiveMinimum: 0,
    maximum: 3650,
    description: "age after which a new token signing key is created (checked at start-up and hourly)",
  }),
  ACCOUNT_COPY_TTL_SECONDS: Type.Integer({
    default: 600,
    minimum: 0,
    maximum: 86400,
    description:
      "longest life of an account in the sign-in copy (seconds; changes drop it at once); 0: ask the users service every time",
  }),
  NONCES_PER_ADDRESS: Type.Integer({
    default: 10,
    minimum: 1,
    maximum: 50,
    description:
      "GetNonce nonces outstanding at once per address; past it one is dropped (first the requesting IP's oldest)",
  }),
  NONCE_PER_IP_PER_MINUTE: Type.Integer({
    default: 60,
    minimum: 1,
    description: "GetNonce calls per client IP per minute (429 beyond)",
  }),
  NONCE_PER_IP_ADDRESS_PER_MINUTE: Type.Integer({
    default: 10,
    minimum: 1,
    description: "GetNonce calls per client IP and address per minute (429 beyond)",
  }),
  LOGIN_FAILURES_PER_IP_PER_MINUTE: Type.Integer({
    default: 30,
    minimum: 1,
    description: "failed Login attempts per client IP per minute (429 beyond)",
  }),
  LOGIN_FAILURES_PER_IP_ADDRESS_PER_MINUTE: Type.Integer({
    default: 10,
    minimum: 1,
    description: "failed Login attempts per client IP and address per minute (429 beyond)",
  }),
  REGISTER_PER_IP_PER_HOUR: Type.Integer({
    // A campus signs up from behind one NAT: a lecture hall at once, with retries (ADR 0010).
    default: 600,
    minimum: 1,
    description: "Register calls per client IP per hour (429 beyond); a campus behind one NAT shares it",
  }),
  REGISTER_PER_IP_ADDRESS_PER_HOUR: Type.Integer({
    default: 5,
    minimum: 1,
    description: "Register calls per client IP and address per hour (429 beyond)",
  }),
};

export type AuthConfig = ReturnType<typeof loadConfig>;

/** Reads and checks the environment once (main.ts); tests pass literals. */
export function loadConfig(env: Record<string, string | undefined> = process.env, cwd = process.cwd()) {
  const e = loadEnv(AuthEnv, env);
  const base = new URL(e.PUBLIC_BASE_URL);
  const siweDomain = e.SIWE_DOMAIN || base.host;
  if (!/^[A-Za-z0-9.-]+(:\d+)?$/.test(siweDomain)) {
    throw new ConfigError(["SIWE_DOMAIN must be a host with an optional port, like app.example.com:8443"]);
  }
  return Object.freeze({
    ...serviceSections(e),
    redis: redisSection(e),
    chain: chainSection(e, cwd),
    mail: {
      smtpUrl: e.SMTP_URL === "" ? undefined : e.SMTP_URL,
      dir: resolve(cwd, e.MAIL_DIR),
      from: e.MAIL_FROM,
    },
    publicBaseUrl: base.toString().replace(/\/+$/, ""),
    jwt: { issuer: e.JWT_ISSUER, audience: e.JWT_AUDIENCE, ttlSeconds: e.TOKEN_TTL_SECONDS },
    keys: { rotationDays: e.KEY_ROTATION_DAYS },
    verification: { ttlHours: e.VERIFICATION_TTL_HOURS },
    signIn: {
      nonceTtlSeconds: e.NONCE_TTL_SECONDS,
      noncesPerAddress: e.NONCES_PER_ADDRESS,
      legacyMessages: e.LEGACY_MESSAGES,
      siweDomain: siweDomain.toLowerCase(),
      clockSkewSeconds: e.SIWE_CLOCK_SKEW_SECONDS,
      accountCopyTtlSeconds: e.ACCOUNT_COPY_TTL_SECONDS,
    },
    rateLimits: {
      noncePerIpPerMinute: e.NONCE_PER_IP_PER_MINUTE,
      noncePerIpAddressPerMinute: e.NONCE_PER_IP_ADDRESS_PER_MINUTE,
      loginFailuresPerIpPerMinute: e.LOGIN_FAILURES_PER_IP_PER_MINUTE,
      loginFailuresPerIpAddressPerMinute: e.LOGIN_FAILURES_PER_IP_ADDRESS_PER_MINUTE,
      registerPerIpPerHour: e.REGISTER_PER_IP_PER_HOUR,
      registerPerIpAddressPerHour: e.REGISTER_PER_IP_ADDRESS_PER_HOUR,
    },
  });
}
