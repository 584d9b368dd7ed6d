import { createRpcAnswers } from "@fundraise/outbox";
import { AuthRpc, ChainRpc, ProjectsRpc } from "@fundraise/protocol";
import { type AppDeps, openAppDatabase, type ServiceApp } from "@fundraise/service-kit";
import type { UsersConfig } from "./config.ts";
import { migrations } from "./db/migrations/index.ts";
import { serveUsersRpc } from "./rpc/index.ts";
import { subscribeUsers } from "./subscribers/index.ts";
import { RoleChange } from "./users/role-change.entity.ts";
import { User } from "./users/user.entity.ts";
import { createUserRepository, USERS_SCHEMA } from "./users/user.repository.ts";
import { createUserService, type PendingInvitations } from "./users/user.service.ts";

/** Composition root: the only place that sees every dependency of the users service. */
export async function startUsersApp(deps: AppDeps<UsersConfig>): Promise<ServiceApp> {
  const { config, log, bus } = deps;
  const { orm, outbox, pool } = await openAppDatabase(deps, {
    schema: USERS_SCHEMA,
    entities: [User, RoleChange],
    migrations,
  });
  // A keyed write retried after its reply was lost gets its first answer (ADR 0029).
  bus.keepAnswers(createRpcAnswers(pool, { schema: USERS_SCHEMA, logger: log }));
  // GET /user/get answers without invitations rather than wait longer for the projects service.
  const pendingInvitations: PendingInvitations = (userId, ctx) =>
    bus.call(
      ProjectsRpc.pendingInvitations,
      { userId },
      { ...ctx, timeoutMs: config.projects.invitationsTimeoutMs },
    );
  const users = createUserService({
    users: createUserRepository(() => orm.em.fork(), pool),
    pendingInvitations,
    projects: {
      fence: async (userId, ctx) => void (await bus.call(ProjectsRpc.fenceUser, { userId }, ctx)),
      // After a failed deletion, whose deadline may have passed: the trace goes on, the deadline does not.
      unfence: async (userId, ctx) =>
        void (await bus.call(
          ProjectsRpc.unfenceUser,
          { userId },
          { requestId: ctx.requestId, traceparent: ctx.traceparent },
        )),
      removeRows: async (userId, ctx) => void (await bus.call(ProjectsRpc.removeUser, { userId }, ctx)),
    },
    sessions: async (change, ctx) => void (await bus.call(AuthRpc.applySession, change, ctx)),
    chain: {
      role: async (address, ctx) => (await bus.call(ChainRpc.role, { address }, ctx)).role,
      // Best effort and short: without the node's own head (the indexer's last polled one lags, so a block
      // beyond it may be older than the change) an admin's change is dated by its time alone.
      async head(ctx) {
        try {
          const { headBlock, headFromNode } = await bus.call(
            ChainRpc.progress,
            {},
            { ...ctx, timeoutMs: 1_000 },
          );
          return headFromNode === true && headBlock >= 0 ? headBlock : null;
        } catch (err) {
          ctx.log.debug({ err }, "chain head unknown; the admin's change is dated by its time");
          return null;
        }
      },
    },
  });
  await serveUsersRpc(bus, users);
  await subscribeUsers(bus, users);
  log.info("users service ready");
  return { outbox };
}
