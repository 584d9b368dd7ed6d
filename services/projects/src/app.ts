import { randomUUID } from "node:crypto";
import { outageReason } from "@fundraise/bus";
import { createRpcAnswers } from "@fundraise/outbox";
import { ChainRpc, UsersRpc } from "@fundraise/protocol";
import { type AppDeps, openAppDatabase, type ServiceApp } from "@fundraise/service-kit";
import { createDirectChainRead } from "./chain/direct-read.ts";
import { withDirectFallback } from "./chain/fallback.ts";
import type { ProjectsConfig } from "./config.ts";
import { migrations } from "./db/migrations/index.ts";
import { type ChainIndex, createChainSync } from "./projects/chain.service.ts";
import { createHotReads } from "./projects/hot-reads.ts";
import { createMembershipService } from "./projects/membership.service.ts";
import { createContentReleases } from "./projects/project.content.ts";
import { Permission, Project, Rating } from "./projects/project.entity.ts";
import type { UserDirectory } from "./projects/project.ports.ts";
import { createProjectRepository, PROJECTS_SCHEMA } from "./projects/project.repository.ts";
import { createProjectService } from "./projects/project.service.ts";
import { createUserFenceService } from "./projects/user-fence.service.ts";
import { serveProjectsRpc } from "./rpc/index.ts";
import { CONSUMER, subscribeProjects } from "./subscribers/index.ts";

/** Composition root: the only place that sees every dependency of the projects service. */
export async function startProjectsApp(deps: AppDeps<ProjectsConfig>): Promise<ServiceApp> {
  const { config, log, bus, shutdown } = deps;
  const { orm, outbox, pool } = await openAppDatabase(deps, {
    schema: PROJECTS_SCHEMA,
    entities: [Project, Permission, Rating],
    migrations,
  });
  // A keyed write retried after its reply was lost gets its first answer (ADR 0029).
  bus.keepAnswers(createRpcAnswers(pool, { schema: PROJECTS_SCHEMA, logger: log }));
  const directChain = createDirectChainRead(config.chain);
  shutdown.add("direct chain reads", () => directChain.close());
  const users: UserDirectory = {
    byUsername: (username, ctx) => bus.call(UsersRpc.byUsername, { username }, ctx),
    byIds: (ids, ctx) => bus.call(UsersRpc.byIds, { ids }, ctx),
  };
  // The indexer gets a part of the caller's deadline; the direct read the rest.
  const indexCtx = <C extends object>(ctx: C) => ({ ...ctx, timeoutMs: config.chain.indexTimeoutMs });
  const index: ChainIndex = withDirectFallback(
    {
      evaluation: (fileHash, ctx) => bus.call(ChainRpc.evaluation, { fileHash }, indexCtx(ctx)),
      auction: (fileHash, ctx) => bus.call(ChainRpc.auctionByHash, { fileHash }, indexCtx(ctx)),
    },
    directChain,
  );
  const repository = createProjectRepository(() => orm.em.fork());
  const projects = createProjectService({
    projects: repository,
    reviewQueueMax: config.reviewQueueMax,
    reviewSharePerProposer: config.reviewSharePerProposer,
    hotReads: createHotReads({ version: () => repository.listVersion() }),
  });
  const memberships = createMembershipService({ projects: repository, users });
  const chain = createChainSync({ projects: repository, index, consumer: CONSUMER });
  const fences = createUserFenceService({ projects: repository, users, graceMs: config.fence.graceMs });
  const releases = createContentReleases({ projects: repository });
  await serveProjectsRpc(bus, { projects, memberships, chain, fences, releases });
  await subscribeProjects(bus, fences, chain);
  const sweeping = setInterval(() => {
    const requestId = `fence-sweep-${randomUUID()}`;
    fences.sweep({ requestId, log: log.child({ requestId }) }).catch((err: unknown) => {
      // The database or the broker away: its reason says enough (a stack only for the unexpected).
      const reason = outageReason(err);
      log.warn(reason === undefined ? { err } : { reason }, "fence sweep failed; it runs again");
    });
  }, config.fence.sweepEveryMs);
  sweeping.unref();
  shutdown.add("fence sweep", () => clearInterval(sweeping));
  log.info("projects service ready");
  return { outbox };
}
