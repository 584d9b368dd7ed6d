import { type Bus, createOutboxRelay, type OutboxRelay } from "@fundraise/bus";
import { ProjectsRpc } from "@fundraise/protocol";
import { createOrm, type Logger, type Orm } from "@fundraise/service-kit";
import pg from "pg";
import type { UsersConfig } from "./config.ts";
import { migrations } from "./db/migrations/index.ts";
import { serveUsersRpc } from "./rpc/index.ts";
import { subscribeUsers } from "./subscribers/index.ts";
import { OwnedProject } from "./users/owned-project.entity.ts";
import { RoleChange } from "./users/role-change.entity.ts";
import { User } from "./users/user.entity.ts";
import { createUserService, type PendingInvitations, USERS_SCHEMA } from "./users/user.service.ts";

export interface UsersApp {
  /** Stops the outbox relay, then closes the database connections. Call after the bus stopped delivering. */
  stop(): Promise<void>;
}

/** Composition root: the only place that sees every dependency of the users service. */
export async function startUsersApp(deps: { config: UsersConfig; log: Logger; bus: Bus }): Promise<UsersApp> {
  const { config, log, bus } = deps;
  let orm: Orm | undefined;
  let relay: OutboxRelay | undefined;
  // The relay's own small pool: it needs dedicated connections (a batch transaction, a LISTEN client)
  // and reads only committed outbox rows. Use cases write through MikroORM (see db/transaction.ts).
  const relayPool = new pg.Pool({ connectionString: config.db.url, max: 2 });
  relayPool.on("error", (err) => log.warn({ err }, "idle outbox relay connection failed"));
  const stop = async () => {
    await relay?.stop();
    await relayPool.end();
    await orm?.close();
  };
  try {
    orm = await createOrm({
      url: config.db.url,
      schema: config.db.schema,
      entities: [User, RoleChange, OwnedProject],
      migrations,
      log,
    });
    const ormReady = orm;
    const pendingInvitations: PendingInvitations = (userId, ctx) =>
      bus.call(
        ProjectsRpc.pendingInvitations,
        { userId },
        {
          timeoutMs: config.projects.invitationsTimeoutMs,
          requestId: ctx.requestId,
          ...(ctx.deadline === undefined ? {} : { deadline: ctx.deadline }),
          ...(ctx.traceparent === undefined ? {} : { traceparent: ctx.traceparent }),
        },
      );
    const users = createUserService({ em: () => ormReady.em.fork(), pendingInvitations });
    relay = createOutboxRelay({ pool: relayPool, bus, schema: USERS_SCHEMA, logger: log });
    await serveUsersRpc(bus, users);
    await subscribeUsers(bus, users);
  } catch (error) {
    await stop();
    throw error;
  }
  log.info("users service ready");
  return { stop };
}
