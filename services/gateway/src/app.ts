import rateLimit from "@fastify/rate-limit";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { type Bus, REQUEST_ID_PATTERN, uuidv7 } from "@fundraise/bus";
import type { Ipfs } from "@fundraise/ipfs";
import { AuthRpc, ErrorCode, errors, ProjectsRpc } from "@fundraise/protocol";
import type { Logger } from "@fundraise/service-kit";
import Fastify, { type FastifyReply, type FastifyRequest, LogController } from "fastify";
import type { Redis } from "ioredis";
import type { GatewayConfig } from "./config.ts";
import { followChainProgress } from "./live/chain-progress.ts";
import { createLiveHub, type LiveHub } from "./live/hub.ts";
import type { LiveLog } from "./live/log.ts";
import { createTickets } from "./live/tickets.ts";
import { createTokenVerifier, registerAuth, type TokenVerifier } from "./plugins/auth.ts";
import { registerCors } from "./plugins/cors.ts";
import {
  clientErrorHandler,
  frameworkErrors,
  HTTP_MAX_HEADER_SIZE,
  registerHttpEdge,
  URL_LIMIT,
} from "./plugins/edge-errors.ts";
import { registerErrorHandling } from "./plugins/error-handler.ts";
import { createIdempotencyStore } from "./plugins/idempotency.ts";
import { createMetrics, type GatewayMetrics, observeRequests } from "./plugins/metrics.ts";
import { registerOpenApi } from "./plugins/openapi.ts";
import { registerPlainNumbers } from "./plugins/plain-numbers.ts";
import { batchedRedisStore } from "./plugins/rate-limit-store.ts";
import { journalRequests } from "./plugins/request-journal.ts";
import { registerRouteTable } from "./plugins/route-table.ts";
import { registerSecurityHeaders } from "./plugins/security.ts";
import { createRedisSessionStore } from "./plugins/sessions.ts";
import { registerWireFormat } from "./plugins/wire.ts";
import { registerAuthRoutes } from "./routes/auth.ts";
import { registerEventDebugRoutes } from "./routes/event-debug.ts";
import { registerEventRoutes } from "./routes/events.ts";
import { createReadinessCheck, registerHealthRoutes } from "./routes/health.ts";
import { registerProjectRoutes } from "./routes/projects.ts";
import { registerUserRoutes } from "./routes/users.ts";
import type { Server } from "./server.ts";

export interface GatewayDeps {
  config: GatewayConfig;
  bus: Bus;
  redis: Redis;
  log: Logger;
  /** Tests may pass their own; by default tokens are checked against the auth service's JWKS. */
  verifier?: TokenVerifier;
  /** The IPFS node uploads are added to and withHex reads come from. */
  ipfs: Ipfs;
  /** Where request timings go; main.ts serves them on the internal port. A fresh registry when unset. */
  metrics?: GatewayMetrics;
  /** The log of events `GET /events` streams (live/amqp-log.ts; tests bring one in memory). */
  liveLog: LiveLog;
}

/** The gateway's app and the hub of its event streams (started before listening, ended on close). */
export type Gateway = Server & { live: LiveHub };

/** One log line per request (on completion), with the id under `requestId` as on every other hop. */
class RequestLog extends LogController {
  constructor() {
    super({ requestIdLogLabel: "requestId" });
  }
  override incomingRequest(request: FastifyRequest, _reply: FastifyReply): void {
    request.log.debug({ method: request.method, url: request.url }, "incoming request");
  }
}

/** The gateway as an app: tests build it and `inject`; main.ts listens. */
export async function buildGateway(deps: GatewayDeps): Promise<Gateway> {
  const { config, bus, redis } = deps;
  const app = Fastify({
    loggerInstance: deps.log,
    // A URL up to URL_LIMIT, whatever its parts; past it, 414 in the envelope (plugins/edge-errors.ts).
    routerOptions: { caseSensitive: false, ignoreTrailingSlash: true, maxParamLength: URL_LIMIT },
    bodyLimit: config.http.bodyLimit,
    trustProxy: config.trustProxy,
    // A caller's request id travels on across every hop when it looks sane. Ours are time-ordered
    // (UUIDv7): the journal finds a request's story by the time in its id (ADR 0034).
    genReqId: (request) => {
      const given = request.headers["x-request-id"];
      return typeof given === "string" && REQUEST_ID_PATTERN.test(given) ? given : uuidv7();
    },
    logController: new RequestLog(),
    // Router and HTTP-server errors answer the envelope too (plugins/edge-errors.ts).
    frameworkErrors,
    clientErrorHandler,
    // Node holds a request's headers to this limit (and to its 60 s headers timeout), checking every
    // `connectionsCheckingInterval`; it lets a started body wait for good, so registerHttpEdge holds the
    // body to the same limit. Both answer 408 in the envelope and close the connection.
    requestTimeout: config.http.requestTimeoutMs,
    http: {
      requireHostHeader: false,
      maxHeaderSize: HTTP_MAX_HEADER_SIZE,
      connectionsCheckingInterval: Math.min(30_000, Math.ceil(config.http.requestTimeoutMs / 10)),
    },
    ajv: {
      customOptions: {
        coerceTypes: true,
        useDefaults: true,
        removeAdditional: false,
        allErrors: false,
      },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Hooks that finish synchronously call `done` rather than return a promise: they run on every request.
  app.addHook("onSend", (request, reply, payload, done) => {
    reply.header("x-request-id", request.id);
    done(null, payload);
  });

  registerRouteTable(app);
  app.decorate("idempotency", createIdempotencyStore(redis, config.redis.prefix));
  registerErrorHandling(app);
  registerHttpEdge(app, config.http.requestTimeoutMs);
  observeRequests(app, deps.metrics ?? createMetrics());
  journalRequests(app, bus);
  await registerSecurityHeaders(app);
  await registerCors(app, config.corsOrigins);
  await app.register(rateLimit, {
    global: true,
    max: config.rateLimit.perMinute,
    timeWindow: 60_000,
    // Counted in Redis, in batches below half a limit (plugins/rate-limit-store.ts).
    store: batchedRedisStore({ redis, prefix: `${config.redis.prefix}rl:`, log: deps.log }),
    // Redis trouble must not take the API down; readiness reports it.
    skipOnError: true,
    errorResponseBuilder: (_request, context) =>
      errors.rateLimited(ErrorCode.RATE_LIMITED, `Too many requests; try again in ${context.after}.`),
  });
  await registerOpenApi(app, config.publicBaseUrl);
  registerWireFormat(app);
  // After it: body numbers are checked under the keys' schema spelling, whatever the client's casing.
  registerPlainNumbers(app);
  const sessions = createRedisSessionStore({
    redis,
    prefix: config.redis.prefix,
    rebuild: (userId) => bus.call(AuthRpc.rebuildSession, { userId }),
  });
  const verifier =
    deps.verifier ??
    createTokenVerifier({
      getJwks: () => bus.call(AuthRpc.jwks, {}),
      issuer: config.jwt.issuer,
      audience: config.jwt.audience,
      sessions,
    });
  registerAuth(app, verifier);

  registerHealthRoutes(app, createReadinessCheck({ bus, redis }));
  registerAuthRoutes(app, bus, {
    authPerMinute: config.rateLimit.authPerMinute,
    publicAppUrl: config.publicAppUrl,
  });
  registerUserRoutes(app, bus);
  registerProjectRoutes(app, bus, {
    uploadBodyLimit: config.http.uploadBodyLimit,
    ipfs: deps.ipfs,
    timeoutMs: config.ipfs.timeoutMs,
    limits: config.limits,
    releaser: {
      release: (fileHashes, reason) => bus.call(ProjectsRpc.releaseContent, { fileHashes, reason }),
      confirm: async (releases) => {
        await bus.call(ProjectsRpc.confirmRelease, { releases });
      },
    },
  });
  registerEventDebugRoutes(app, bus);

  const live = createLiveHub({
    log: deps.liveLog,
    views: (projectIds) => bus.call(ProjectsRpc.views, { projectIds }),
    sessions,
    logger: deps.log.child({ component: "live" }),
    maxBufferedBytes: config.live.maxBufferedBytes,
  });
  await registerEventRoutes(app, { hub: live, verifier, tickets: createTickets(redis, config.redis.prefix) });
  const progress = followChainProgress({ redis, prefix: config.redis.prefix, hub: live, log: deps.log });
  // Streams end first on close (SIGTERM): their clients reconnect to another replica meanwhile.
  app.addHook("preClose", (done) => {
    progress.stop();
    live.closeAll();
    done();
  });
  app.addHook("onClose", async () => {
    await deps.liveLog.close();
  });
  return Object.assign(app, { live });
}
