/**
 * The baseline of bench/logins.ts: the same sign-in work in one process, with no broker and no gateway.
 * The auth service's own sign-in use cases (nonce in Redis, signature check, chain role, session in Redis
 * and Postgres, token signed with the key in Postgres) behind two fastify routes of the gateway's paths,
 * and the users service beside them on an in-process bus for the account lookups a sign-in makes (account
 * copy misses, chain role changes). Its own database and Redis prefix; the system's chain.
 *
 * Reads DATABASE_URL, REDIS_PREFIX, CHAIN_RPC_URL, CHAIN_DEPLOYMENT_FILE, WALLET_ADDRESSES (comma-separated:
 * seeded as verified users), PORT; prints `listening <url>` once it serves.
 */
import { randomUUID } from "node:crypto";
import { createInMemoryBus } from "@fundraise/bus/testing";
import { ok, toAppError } from "@fundraise/protocol";
import { createLogger, createShutdown } from "@fundraise/service-kit";
import Fastify from "fastify";
import pg from "pg";
import { startAuthApp } from "../services/auth/src/app.ts";
import { loadConfig as loadAuthConfig } from "../services/auth/src/config.ts";
import { startUsersApp } from "../services/users/src/app.ts";
import { loadConfig as loadUsersConfig } from "../services/users/src/config.ts";
import { seedUser } from "../services/users/src/test/harness.ts";

const env = process.env as Record<string, string>;
const log = createLogger({ service: "bench-in-process-logins", level: "warn" });
const shutdown = createShutdown(log);
const bus = createInMemoryBus({ logger: log });
await startUsersApp({ config: loadUsersConfig(env), log, bus, shutdown });
const auth = await startAuthApp({ config: loadAuthConfig(env), log, bus, shutdown });

const sql = new pg.Pool({ connectionString: env.DATABASE_URL, max: 2 });
for (const address of (env.WALLET_ADDRESSES ?? "").split(",").filter(Boolean)) {
  await seedUser(sql, { address });
}
await sql.end();

const app = Fastify();
const answer = async (reply: { code(n: number): unknown }, work: () => Promise<unknown>) => {
  try {
    return ok(await work());
  } catch (error) {
    const appError = toAppError(error);
    reply.code(appError.kind === "validation" ? 400 : 401);
    return { data: null, success: false, message: appError.message };
  }
};
app.get<{ Params: { address: string } }>("/Authentication/GetNonce/:address", (request, reply) =>
  answer(reply, () => auth.signIn.issueNonce(request.params.address, { ip: request.ip })),
);
app.post<{ Body: { address: string; signedMessage: string } }>("/Authentication/Login", (request, reply) =>
  answer(reply, () => {
    const requestId = randomUUID();
    return auth.signIn.login(request.body, { ip: request.ip }, { requestId, log: log.child({ requestId }) });
  }),
);
const address = await app.listen({ port: Number(env.PORT ?? 0), host: "127.0.0.1" });
process.stdout.write(`listening ${address}\n`);
process.on("SIGTERM", () => {
  void app
    .close()
    .then(() => shutdown.run("benchmark over"))
    .then(() => process.exit(0));
});
