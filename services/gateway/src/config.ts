import { IpfsEnv, ipfsSections } from "@fundraise/ipfs";
import {
  AmqpEnv,
  amqpSection,
  JwtEnv,
  LogEnv,
  loadEnv,
  logSection,
  PublicUrlEnv,
  RedisEnv,
  redisSection,
} from "@fundraise/service-kit";
import Type from "typebox";

export const GatewayEnv = {
  ...AmqpEnv,
  ...IpfsEnv,
  ...RedisEnv,
  ...LogEnv,
  ...PublicUrlEnv,
  ...JwtEnv,
  PORT: Type.Integer({ default: 8080, minimum: 0, maximum: 65535, description: "gateway HTTP port" }),
  HOST: Type.String({
    default: "127.0.0.1",
    description: "interface the gateway listens on (0.0.0.0 in containers)",
  }),
  METRICS_PORT: Type.Integer({
    default: 9464,
    minimum: 0,
    maximum: 65535,
    description: "internal port of /metrics and detailed /readyz (never the public PORT); 0 turns it off",
  }),
  METRICS_HOST: Type.String({
    default: "127.0.0.1",
    description: "interface of the internal port (0.0.0.0 for a scraper in another container)",
  }),
  PUBLIC_APP_URL: Type.String({
    default: "",
    description: "the web client's home page (verify-email redirect); PUBLIC_BASE_URL when empty",
  }),
  CORS_ORIGINS: Type.String({
    default: "*",
    description: "comma-separated origins of browser clients (https://app.example.org); * only locally",
  }),
  RATE_LIMIT_PER_MINUTE: Type.Integer({
    default: 600,
    minimum: 1,
    description: "requests per IP per minute",
  }),
  AUTH_RATE_LIMIT_PER_MINUTE: Type.Integer({
    default: 30,
    minimum: 1,
    description: "GetNonce, Login and Register calls per IP per minute",
  }),
  BODY_LIMIT_BYTES: Type.Integer({ default: 1_048_576, minimum: 1024, description: "largest JSON body" }),
  UPLOAD_BODY_LIMIT_BYTES: Type.Integer({
    default: 33_554_432,
    minimum: 1024,
    description: "largest body of Project/Add and Project/Update (file and image as hex)",
  }),
  HTTP_REQUEST_TIMEOUT_MS: Type.Integer({
    default: 300_000,
    minimum: 1000,
    description:
      "a request's headers and body must arrive within this (else 408): a body that never ends holds no connection",
  }),
  TRUST_PROXY: Type.Boolean({ default: false, description: "take the client IP from X-Forwarded-For" }),
  LIVE_MAX_BUFFERED_BYTES: Type.Integer({
    default: 1_048_576,
    minimum: 1024,
    description: "unsent bytes a GET /events subscriber may hold before it is cut off (it resumes)",
  }),
};

export type GatewayConfig = ReturnType<typeof loadConfig>;

export function loadConfig(env: Record<string, string | undefined> = process.env) {
  const e = loadEnv(GatewayEnv, env);
  return Object.freeze({
    http: {
      port: e.PORT,
      host: e.HOST,
      bodyLimit: e.BODY_LIMIT_BYTES,
      uploadBodyLimit: e.UPLOAD_BODY_LIMIT_BYTES,
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
    },
    metrics: { port: e.METRICS_PORT, host: e.METRICS_HOST },
    trustProxy: e.TRUST_PROXY,
    live: { maxBufferedBytes: e.LIVE_MAX_BUFFERED_BYTES },
    publicBaseUrl: e.PUBLIC_BASE_URL,
    publicAppUrl: e.PUBLIC_APP_URL || e.PUBLIC_BASE_URL,
    corsOrigins:
      e.CORS_ORIGINS.trim() === "*"
        ? true
        : e.CORS_ORIGINS.split(",")
            .map((o) => o.trim())
            .filter((o) => o !== ""),
    jwt: { issuer: e.JWT_ISSUER, audience: e.JWT_AUDIENCE },
    rateLimit: { perMinute: e.RATE_LIMIT_PER_MINUTE, authPerMinute: e.AUTH_RATE_LIMIT_PER_MINUTE },
    amqp: amqpSection(e),
    redis: redisSection(e),
    log: logSection(e),
    // The gateway adds uploads to IPFS, pinned, and reads files back for withHex.
    ...ipfsSections(e),
  });
}
