import { AmqpEnv, DatabaseEnv, LogEnv, loadEnv } from "@fundraise/service-kit";
import Type from "typebox";

/** The projects service's own variables. */
export const ProjectsOwnEnv = {
  REVIEW_QUEUE_MAX: Type.Integer({
    default: 100,
    minimum: 1,
    maximum: 100_000,
    description: "projects that may wait for a viewer (Pending, not viewer-accepted); Add beyond is 503",
  }),
};

export const ProjectsEnv = { ...DatabaseEnv, ...AmqpEnv, ...LogEnv, ...ProjectsOwnEnv };

export type ProjectsConfig = ReturnType<typeof loadConfig>;

export function loadConfig(env: Record<string, string | undefined> = process.env) {
  const e = loadEnv(ProjectsEnv, env);
  return Object.freeze({
    db: { url: e.DATABASE_URL, schema: "projects" },
    amqp: { url: e.AMQP_URL, prefetch: e.AMQP_PREFETCH, journal: e.BUS_JOURNAL },
    log: { level: e.LOG_LEVEL },
    reviewQueueMax: e.REVIEW_QUEUE_MAX,
    // withHex reads each file back from the storage service; a list asks for a few at a time.
    readConcurrency: 4,
  });
}
