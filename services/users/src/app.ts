import type { Bus } from "@fundraise/bus";
import { createOrm, type Logger } from "@fundraise/service-kit";
import type { UsersConfig } from "./config.ts";
import { migrations } from "./db/migrations/index.ts";
import { serveUsersRpc } from "./rpc/index.ts";
import { User } from "./users/user.entity.ts";
import { createUserService } from "./users/user.service.ts";

export interface UsersApp {
  stop(): Promise<void>;
}

/** Composition root: the only place that sees every dependency of the users service. */
export async function startUsersApp(deps: { config: UsersConfig; log: Logger; bus: Bus }): Promise<UsersApp> {
  const { config, log, bus } = deps;
  const orm = await createOrm({
    url: config.db.url,
    schema: config.db.schema,
    entities: [User],
    migrations,
    log,
  });
  const users = createUserService({ em: () => orm.em.fork() });
  await serveUsersRpc(bus, users);
  log.info("users service ready");
  return {
    async stop() {
      await orm.close();
    },
  };
}
