import { resolve } from "node:path";
import Type, { type Static, type TObject, type TProperties } from "typebox";
import { Compile } from "typebox/compile";
import Value from "typebox/value";

/**
 * Environment fragments, one name per thing across every service (`.env.example` lists them), each
 * with the config section it becomes (`…Section` below). A service's config.ts composes the fragments it
 * needs plus its own variables, calls `loadEnv` once and adds only its own sections.
 */
export const DatabaseEnv = {
  DATABASE_URL: Type.String({
    default: "postgres://postgres@127.0.0.1:5432/fundraising",
    pattern: "^postgres(ql)?://",
    description: "PostgreSQL connection URL; each service uses its own schema in this database",
  }),
};
export const AmqpEnv = {
  AMQP_URL: Type.String({
    default: "amqp://guest:guest@127.0.0.1:5672",
    pattern: "^amqps?://",
    description: "RabbitMQ connection URL (a vhost may follow the host)",
  }),
  AMQP_PREFETCH: Type.Integer({
    default: 32,
    minimum: 1,
    maximum: 10_000,
    description: "messages in flight per consumer",
  }),
  BUS_JOURNAL: Type.Boolean({
    default: true,
    description: "append every bus message to the replayable journal stream",
  }),
  JOURNAL_MAX_AGE: Type.String({
    default: "7D",
    pattern: "^[1-9][0-9]*(Y|M|D|h|m|s)$",
    description:
      "how long the journal keeps entries (a number and Y, M, D, h, m or s), applied when its stream is made; an existing stream keeps its own (a policy changes it: docs/adr/0034)",
  }),
  JOURNAL_PSEUDONYM_KEY: Type.String({
    default: "fundraise-local-journal-key",
    minLength: 16,
    description:
      "secret key of the pseudonyms that replace e-mail addresses, names and IPs in the journal; set your own in production, the same in every service",
  }),
};
export const RedisEnv = {
  REDIS_URL: Type.String({
    default: "redis://127.0.0.1:6379",
    pattern: "^rediss?://",
    description: "Redis URL",
  }),
  REDIS_PREFIX: Type.String({
    default: "fr:",
    description: "prefix of every Redis key this deployment writes",
  }),
};
export const ChainEnv = {
  CHAIN_RPC_URL: Type.String({
    default: "http://127.0.0.1:8545",
    pattern: "^(https?|wss?)://",
    description: "EVM JSON-RPC endpoint; unset: `pnpm start` starts anvil and deploys the contracts",
  }),
  CHAIN_DEPLOYMENT_FILE: Type.String({
    default: ".local/chain/deployment.json",
    description: "deployment file written by the contracts deploy script (chain id, contract addresses)",
  }),
  CHAIN_TIMEOUT_MS: Type.Integer({
    default: 5000,
    minimum: 100,
    description: "timeout of one chain JSON-RPC request; past it the read that needed it answers 503",
  }),
};
export const HealthEnv = {
  HEALTH_PORT: Type.Integer({
    default: 0,
    minimum: 0,
    maximum: 65_535,
    description: "internal port of /healthz, /readyz and /metrics (probes, Prometheus); 0 turns it off",
  }),
  HEALTH_HOST: Type.String({
    default: "127.0.0.1",
    description: "interface of HEALTH_PORT (0.0.0.0 in a container, never a public address)",
  }),
};
export const LogEnv = {
  LOG_LEVEL: Type.Enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], {
    default: "info",
    description: "pino log level",
  }),
};

/** The public address of the gateway (auth's mail links and SIWE URIs, the gateway's OpenAPI servers). */
export const PublicUrlEnv = {
  PUBLIC_BASE_URL: Type.String({
    default: "http://localhost:8080",
    pattern: "^https?://",
    description: "where the gateway is reached from outside (mail links)",
  }),
};
/** Access tokens: what auth writes into them and the gateway expects. */
export const JwtEnv = {
  JWT_ISSUER: Type.String({ default: "fundraise-auth", description: "expected `iss` of access tokens" }),
  JWT_AUDIENCE: Type.String({ default: "fundraise", description: "expected `aud` of access tokens" }),
};
/** What every service but the gateway reads: its database, the bus, the log level, the health port. */
export const ServiceEnv = { ...DatabaseEnv, ...AmqpEnv, ...LogEnv, ...HealthEnv };

type EnvOf<P extends TProperties> = Static<TObject<P>>;

export const amqpSection = (e: EnvOf<typeof AmqpEnv>) => ({
  url: e.AMQP_URL,
  prefetch: e.AMQP_PREFETCH,
  journal: e.BUS_JOURNAL,
  journalMaxAge: e.JOURNAL_MAX_AGE,
  journalKey: e.JOURNAL_PSEUDONYM_KEY,
});
export const logSection = (e: EnvOf<typeof LogEnv>) => ({ level: e.LOG_LEVEL });
export const redisSection = (e: EnvOf<typeof RedisEnv>) => ({ url: e.REDIS_URL, prefix: e.REDIS_PREFIX });
/** The chain's section; the deployment file relative to `cwd`. */
export const chainSection = (e: EnvOf<typeof ChainEnv>, cwd: string) => ({
  url: e.CHAIN_RPC_URL,
  deploymentFile: resolve(cwd, e.CHAIN_DEPLOYMENT_FILE),
  timeoutMs: e.CHAIN_TIMEOUT_MS,
});
/** ServiceEnv's sections: `db` (the schema is the service's own constant), and what runService reads. */
export const serviceSections = (e: EnvOf<typeof ServiceEnv>) => ({
  db: { url: e.DATABASE_URL },
  amqp: amqpSection(e),
  log: logSection(e),
  health: { port: e.HEALTH_PORT, host: e.HEALTH_HOST },
});

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
  }
}

/**
 * Reads `env` against the schema: converts strings to numbers and booleans, applies defaults, and throws
 * one ConfigError naming every bad or missing variable. Values of variables are never echoed (secrets).
 */
export function loadEnv<P extends TProperties>(
  properties: P,
  env: Record<string, string | undefined> = process.env,
): Readonly<Static<TObject<P>>> {
  const schema = Type.Object(properties);
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(properties)) {
    const value = env[key];
    if (value !== undefined && value !== "") raw[key] = value;
  }
  const withDefaults = Value.Default(schema, raw) as Record<string, unknown>;
  const converted = Value.Convert(schema, withDefaults);
  const compiled = Compile(schema);
  if (!compiled.Check(converted)) {
    const problems = new Map<string, string>();
    for (const error of compiled.Errors(converted)) {
      const name = error.instancePath.replace(/^\//, "");
      if (name === "") {
        const missing = (error.params as { requiredProperties?: string[] }).requiredProperties ?? [];
        for (const m of missing) problems.set(m, `${m} is required`);
      } else if (!problems.has(name)) {
        const description = (properties[name] as { description?: string } | undefined)?.description;
        problems.set(name, `${name} ${error.message}${description ? ` (${description})` : ""}`);
      }
    }
    throw new ConfigError([...problems.values()]);
  }
  return Object.freeze(converted) as Readonly<Static<TObject<P>>>;
}

/** Lists a schema's variables with defaults and descriptions, for .env.example. */
export function describeEnv(
  properties: TProperties,
): { name: string; default: unknown; description: string }[] {
  return Object.entries(properties).map(([name, schema]) => {
    const s = schema as { default?: unknown; description?: string };
    return { name, default: s.default, description: s.description ?? "" };
  });
}
