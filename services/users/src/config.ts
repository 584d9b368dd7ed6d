import { AmqpEnv, DatabaseEnv, HealthEnv, LogEnv, loadEnv } from "@fundraise/service-kit";

export const UsersEnv = { ...DatabaseEnv, ...AmqpEnv, ...LogEnv, ...HealthEnv };

export type UsersConfig = ReturnType<typeof loadConfig>;

export function loadConfig(env: Record<string, string | undefined> = process.env) {
  const e = loadEnv(UsersEnv, env);
  return Object.freeze({
    db: { url: e.DATABASE_URL, schema: "users" },
    amqp: { url: e.AMQP_URL, prefetch: e.AMQP_PREFETCH, journal: e.BUS_JOURNAL },
    log: { level: e.LOG_LEVEL },
    health: { port: e.HEALTH_PORT, host: e.HEALTH_HOST },
    // GET /user/get answers without invitations rather than wait longer for the projects service.
    projects: { invitationsTimeoutMs: 1500 },
  });
}
