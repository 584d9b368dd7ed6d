import type { FastifyReply, FastifyRequest } from "fastify";
import type { KeyUse } from "../../plugins/idempotency.ts";
import type { Server } from "../../server.ts";

/** A write's Idempotency-Key, claimed for this request (plugins/idempotency.ts). */
export type ClaimedKey = Extract<KeyUse, { kind: "claimed" }>;

/**
 * Claim the Idempotency-Key, on writes: none given, nothing to do; the key's first answer, sent again
 * (`replayed`: the request is answered); or the key claimed for this request, named by the RPC request
 * it asks. A key in use or reused for another request is refused (409).
 */
export function claimKey(
  app: Server,
  request: FastifyRequest,
  reply: FastifyReply,
  rpcRequest: unknown,
): Promise<KeyUse> {
  return app.idempotency.use(request, reply, rpcRequest);
}

/**
 * The write failed: its key is free for the retry. A failed write did nothing (writes are transactions),
 * and one whose reply was lost (503/504) is answered again by its service, which kept the answer with
 * the key. Redis down: the claim lapses by itself (CLAIM_MS), and the answer is the write's error, not
 * Redis's.
 */
export async function releaseKey(claimed: ClaimedKey | null, request: FastifyRequest): Promise<void> {
  await claimed?.release().catch((err: unknown) => request.log.warn({ err }, "Idempotency-Key not released"));
}

/**
 * A write's answer, kept with its key as it is sent. The write is done: its answer goes out even when
 * Redis cannot keep it (a retry then runs again once the claim lapses, and finds what this one did).
 * `replayed`: the service's kept first answer (the first reply was lost), a replay as the gateway's own are.
 */
export async function sendKept(
  claimed: ClaimedKey,
  request: FastifyRequest,
  reply: FastifyReply,
  answer: { status: number; body: unknown; replayed: boolean },
): Promise<FastifyReply> {
  const text = String(reply.code(answer.status).serialize(answer.body));
  await claimed
    .settle(answer.status, text)
    .catch((err: unknown) => request.log.warn({ err }, "Idempotency-Key answer not kept"));
  if (answer.replayed) reply.header("idempotent-replayed", "true");
  return reply.type("application/json; charset=utf-8").send(text);
}
