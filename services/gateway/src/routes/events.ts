import sse, { type SSEPluginOptions } from "@fastify/sse";
import { ErrorCode, errors } from "@fundraise/protocol";
import type { FastifyInstance, FastifyPluginAsync } from "fastify";
import Type from "typebox";
import type { LiveHub, StreamIdentity } from "../live/hub.ts";
import { STREAM_MESSAGES } from "../live/messages.ts";
import type { Tickets } from "../live/tickets.ts";
import type { TokenVerifier } from "../plugins/auth.ts";
import { bearerOf } from "../plugins/bearer.ts";
import type { Server } from "../server.ts";
import { ErrorEnvelope, inline } from "./steps/schema.ts";

/** A comment line this often keeps proxies from closing an idle stream. */
const HEARTBEAT_MS = 15_000;

const describeStream =
  "Server-Sent Events. Each message: `id:` (an opaque resume position; send it back as `Last-Event-ID` " +
  "or `lastEventId`), `event:` (its type) and `data:` (one line of JSON). Types: `project` " +
  "(ProjectMessage), `invitation` (InvitationMessage), `role` (RoleMessage), `chain` (ChainMessage), " +
  "`reset` (ResetMessage). A comment is sent every 15 s. Identify with `Authorization: Bearer <jwt>`, or " +
  "`?ticket=` from POST /events/ticket (EventSource cannot send headers); anonymous streams are allowed.";

/**
 * `GET /events` and `POST /events/ticket` (docs/adr/0028-live-updates.md). The stream's framing is
 * @fastify/sse's; what goes in it is the hub's (live/hub.ts).
 */
export async function registerEventRoutes(
  app: Server,
  deps: { hub: LiveHub; verifier: TokenVerifier; tickets: Tickets },
): Promise<void> {
  // The plugin's types name fastify's default logger and type provider; the instance is the same.
  await (app as unknown as FastifyInstance).register(sse as unknown as FastifyPluginAsync<SSEPluginOptions>, {
    heartbeatInterval: HEARTBEAT_MS,
    serializer: (data: unknown) => String(data),
  });
  for (const schema of STREAM_MESSAGES) app.addSchema(schema);

  app.post(
    "/events/ticket",
    {
      config: { access: "signed-in" },
      schema: {
        tags: ["Events"],
        summary: "A single-use ticket (30 s) for GET /events?ticket=, for EventSource",
        security: [{ bearer: [] }],
        response: {
          200: inline(
            Type.Object({ data: Type.String(), success: Type.Literal(true), message: Type.Null() }),
          ),
          "4xx": ErrorEnvelope,
          "5xx": ErrorEnvelope,
        },
      },
    },
    async (request) => {
      const bearer = bearerOf(request);
      if (bearer.kind !== "token") throw errors.unauthenticated(ErrorCode.TOKEN_MISSING, "Sign in first.");
      return { data: await deps.tickets.issue(bearer.token), success: true as const, message: null };
    },
  );

  app.get(
    "/events",
    {
      // No HEAD: fastify's would run the stream (never answering) and spend the ticket.
      exposeHeadRoute: false,
      // Authenticated here, not by the auth hook: a bad token or ticket is 401 even on this open route.
      config: {},
      sse: { kind: "manual" },
      schema: {
        tags: ["Events"],
        summary: "Live updates (text/event-stream)",
        description: describeStream,
        querystring: Type.Object({
          ticket: Type.Optional(Type.String({ maxLength: 128 })),
          lastEventId: Type.Optional(Type.String({ maxLength: 32 })),
        }),
        headers: Type.Object({ "last-event-id": Type.Optional(Type.String({ maxLength: 32 })) }),
        response: {
          200: {
            description: describeStream,
            content: {
              "text/event-stream": {
                schema: {
                  oneOf: STREAM_MESSAGES.map((m) => ({ $ref: `${(m as unknown as { $id: string }).$id}#` })),
                },
              },
            },
          },
          "4xx": ErrorEnvelope,
          "5xx": ErrorEnvelope,
        },
      },
    },
    async (request, reply) => {
      const query = request.query as { ticket?: string; lastEventId?: string };
      const identity = await identify(deps, request, query.ticket);
      const stream = reply.sse;
      if (!stream) throw errors.internal(ErrorCode.INTERNAL, "the event stream is not available");
      reply.header("cache-control", "no-store");
      reply.header("x-accel-buffering", "no");
      stream.keepAlive();
      const detach = deps.hub.subscribe(
        identity,
        {
          write(message) {
            // `data` present (maybe undefined): an id- or retry-only message is still a message.
            if (stream.isConnected) stream.send({ data: undefined, ...message }).catch(() => undefined);
            return reply.raw.writableLength;
          },
          end: (abrupt) => (abrupt ? reply.raw.destroy() : stream.close()),
        },
        request.headers["last-event-id"] ?? query.lastEventId,
      );
      stream.onClose(detach);
    },
  );
}

async function identify(
  deps: { verifier: TokenVerifier; tickets: Tickets },
  request: Parameters<typeof bearerOf>[0],
  ticket: string | undefined,
): Promise<StreamIdentity> {
  let token: string | null = null;
  if (ticket !== undefined) token = await deps.tickets.redeem(ticket);
  else {
    const bearer = bearerOf(request);
    if (bearer.kind === "malformed") {
      throw errors.unauthenticated(
        ErrorCode.TOKEN_INVALID,
        "The Authorization header must be exactly one `Bearer <token>`.",
      );
    }
    if (bearer.kind === "token") token = bearer.token;
  }
  if (token === null) return { caller: null, tokenVersion: 0, expiresAt: null };
  const { caller, tokenVersion, expiresAt } = await deps.verifier.inspect(token);
  return { caller, tokenVersion, expiresAt };
}
