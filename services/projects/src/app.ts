import type { Bus } from "@fundraise/bus";
import { ChainRpc, StorageRpc, UsersRpc } from "@fundraise/protocol";
import { type Logger, openServiceDatabase, type ServiceApp } from "@fundraise/service-kit";
import type { ProjectsConfig } from "./config.ts";
import { migrations } from "./db/migrations/index.ts";
import { type ChainIndex, createChainSync } from "./projects/chain.service.ts";
import { createMembershipService } from "./projects/membership.service.ts";
import { Permission, Project, Rating } from "./projects/project.entity.ts";
import type { ContentStore, UserDirectory } from "./projects/project.ports.ts";
import { createProjectRepository, PROJECTS_SCHEMA } from "./projects/project.repository.ts";
import { createProjectService } from "./projects/project.service.ts";
import { serveProjectsRpc } from "./rpc/index.ts";
import { CONSUMER, subscribeProjects } from "./subscribers/index.ts";

/** Composition root: the only place that sees every dependency of the projects service. */
export async function startProjectsApp(deps: {
  config: ProjectsConfig;
  log: Logger;
  bus: Bus;
}): Promise<ServiceApp> {
  const { config, log, bus } = deps;
  const { orm, outbox, stop } = await openServiceDatabase({
    url: config.db.url,
    schema: PROJECTS_SCHEMA,
    entities: [Project, Permission, Rating],
    migrations,
    bus,
    log,
  });
  try {
    const content: ContentStore = {
      upload: (input, ctx) => bus.call(StorageRpc.upload, input, ctx),
      // Clean-up runs after the answer too: the request id and trace pass on, the caller's deadline does not.
      remove: (fileHash, reason, ctx) =>
        bus.call(
          StorageRpc.remove,
          { fileHash, reason },
          { requestId: ctx.requestId, traceparent: ctx.traceparent },
        ),
      read: (fileHash, ctx) => bus.call(StorageRpc.read, { fileHash }, ctx),
    };
    const users: UserDirectory = {
      byUsername: (username, ctx) => bus.call(UsersRpc.byUsername, { username }, ctx),
      byIds: (ids, ctx) => bus.call(UsersRpc.byIds, { ids }, ctx),
    };
    const index: ChainIndex = {
      evaluation: (fileHash, ctx) => bus.call(ChainRpc.evaluation, { fileHash }, ctx),
      auction: (fileHash, ctx) => bus.call(ChainRpc.auctionByHash, { fileHash }, ctx),
    };
    const repository = createProjectRepository(() => orm.em.fork());
    const projects = createProjectService({
      projects: repository,
      content,
      reviewQueueMax: config.reviewQueueMax,
      readConcurrency: config.readConcurrency,
    });
    const memberships = createMembershipService({ projects: repository, users });
    const chain = createChainSync({ projects: repository, index, consumer: CONSUMER });
    await serveProjectsRpc(bus, projects, memberships, chain);
    await subscribeProjects(bus, projects, chain);
  } catch (error) {
    await stop();
    throw error;
  }
  log.info("projects service ready");
  return { outbox, stop };
}
