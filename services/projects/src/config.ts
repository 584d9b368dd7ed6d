import { ChainEnv, chainSection, loadEnv, ServiceEnv, serviceSections } from "@fundraise/service-kit";
import Type from "typebox";

/** The projects service's own variables. */
export const ProjectsOwnEnv = {
  REVIEW_QUEUE_MAX: Type.Integer({
    default: 100,
    minimum: 1,
    maximum: 100_000,
    description: "projects that may wait for a viewer (Pending, not viewer-accepted); Add beyond is 503",
  }),
  REVIEW_QUEUE_PER_PROPOSER: Type.Integer({
    default: 5,
    minimum: 1,
    maximum: 100_000,
    description: "projects one proposer may have waiting for a viewer; Add beyond is 429",
  }),
};

export const ProjectsEnv = { ...ServiceEnv, ...ChainEnv, ...ProjectsOwnEnv };

export type ProjectsConfig = ReturnType<typeof loadConfig>;

export function loadConfig(env: Record<string, string | undefined> = process.env, cwd = process.cwd()) {
  const e = loadEnv(ProjectsEnv, env);
  return Object.freeze({
    ...serviceSections(e),
    reviewQueueMax: e.REVIEW_QUEUE_MAX,
    reviewSharePerProposer: e.REVIEW_QUEUE_PER_PROPOSER,
    // A deletion's fence unconfirmed this long is checked against the users service (user-fence.service.ts).
    fence: { graceMs: 120_000, sweepEveryMs: 60_000 },
    // "Sync now": the chain index first (bounded, so the direct chain read keeps time), then the chain.
    chain: { ...chainSection(e, cwd), indexTimeoutMs: 2000 },
  });
}
