/**
 * The baseline of bench/learnusercount.ts: the users service's own count use case, on the same database,
 * served directly by fastify in one process: no gateway, no broker.
 */
import { ok } from "@fundraise/protocol";
import { createLogger, createOrm, createSqlPool } from "@fundraise/service-kit";
import Fastify from "fastify";
import { migrations } from "../services/users/src/db/migrations/index.ts";
import { User } from "../services/users/src/users/user.entity.ts";
import { createUserRepository, USERS_SCHEMA } from "../services/users/src/users/user.repository.ts";
import { createUserService } from "../services/users/src/users/user.service.ts";

const log = createLogger({ service: "bench-in-process", level: "warn" });
const orm = await createOrm({
  url: process.env.DATABASE_URL as string,
  schema: USERS_SCHEMA,
  entities: [User],
  migrations,
  log,
});
const pool = createSqlPool(process.env.DATABASE_URL as string);
// Only the count is served here: the cross-service steps of deletions and role changes are not wired.
const notWired = async () => {
  throw new Error("not wired in the benchmark's baseline");
};
const users = createUserService({
  users: createUserRepository(() => orm.em.fork(), pool),
  projects: { fence: notWired, unfence: notWired, removeRows: notWired },
  sessions: notWired,
  chain: { role: notWired, head: notWired },
});
const app = Fastify();
app.get("/user/learnusercount", async () => ok(await users.countVerified()));
const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: "127.0.0.1" });
process.stdout.write(`listening ${address}\n`);
process.on("SIGTERM", () => {
  void app
    .close()
    .then(() => pool.end())
    .then(() => orm.close())
    .then(() => process.exit(0));
});
