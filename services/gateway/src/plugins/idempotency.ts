import { createHash } from "node:crypto";
import type { RequestKey } from "@fundraise/bus";
import { ErrorCode, errors } from "@fundraise/protocol";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Redis } from "ioredis";

/** How long a first answer is kept for its key (rules.md §8.13: 24 h). */
const KEPT_MS = 24 * 3600 * 1000;
/** How long a key stays claimed by a request under way: past any RPC's deadline (a crashed gateway's claim lapses). */
const CLAIM_MS = 120_000;
/** The draft's key: one token of visible ASCII (a UUID in practice). */
const KEY = /^[\x21-\x7e]{1,255}$/;

declare module "fastify" {
  interface FastifyInstance {
    idempotency: IdempotencyStore;
  }
}

interface Claim {
  fingerprint: string;
  /** Set once answered: the status and the serialized answer, sent again as they were. */
  status?: number;
  body?: string;
}

/** What a write does with its `Idempotency-Key`: nothing (none), answer again, or claim the key. */
export type KeyUse =
  | { kind: "none" }
  | { kind: "replayed" }
  | {
      kind: "claimed";
      /** Goes with the RPC: the service answers a retry whose first reply was lost (ADR 0029). */
      requestKey: RequestKey;
      settle(status: number, body: string): Promise<void>;
      release(): Promise<void>;
    };

/**
 * `Idempotency-Key` on writes (rules.md §8.13; the IETF draft's semantics): the same key with the same
 * request, from the same caller, within 24 h, answers the first answer again and does nothing twice; the
 * same key with another request is 409; a request under way with it is 409 too (retry later). Kept in
 * Redis, so every replica answers alike. A failed write did nothing (writes are transactions), so a
 * failure frees the key: the retry runs, and fails alike or succeeds. A 503/504 may be a reply lost after
 * the write: the key goes with the RPC (`requestKey`), and the service answers the retry with what it kept.
 * The request is named by the RPC request the route built, with the caller's id: for an upload, the
 * content's CID, not the hex of its body.
 */
export function createIdempotencyStore(redis: Redis, prefix: string) {
  // The key named with its caller: what the services keep answers under; Redis adds the prefix.
  const idOf = (scope: string, key: string) =>
    `${scope}:${createHash("sha256").update(key).digest("base64url")}`;

  return {
    async use(request: FastifyRequest, reply: FastifyReply, rpcRequest: unknown): Promise<KeyUse> {
      const raw = request.headers["idempotency-key"];
      if (raw === undefined) return { kind: "none" };
      if (typeof raw !== "string" || !KEY.test(raw)) {
        throw errors.validation(
          ErrorCode.VALIDATION_FAILED,
          "Idempotency-Key must be one header of 1 to 255 visible ASCII characters.",
        );
      }
      const scope = request.caller ? `u${request.caller.userId}` : `ip${request.ip}`;
      const id = idOf(scope, raw);
      const key = `${prefix}idem:${id}`;
      const { caller: _, ...rest } = (rpcRequest ?? {}) as { caller?: unknown };
      // What the request asks, not when this gateway stored its content (an upload's `pinnedAt`).
      const asked = JSON.stringify(rest, (field, value) => (field === "pinnedAt" ? undefined : value));
      const fingerprint = createHash("sha256")
        .update(`${request.method} ${request.routeOptions.url} ${asked}`)
        .digest("base64url");
      const claimed = await unlessDown(redis.set(key, JSON.stringify({ fingerprint }), "PX", CLAIM_MS, "NX"));
      if (claimed === null) {
        const held = await unlessDown(redis.get(key));
        const claim = held === null ? null : (JSON.parse(held) as Claim);
        if (claim && claim.fingerprint !== fingerprint) {
          throw errors.conflict(
            ErrorCode.IDEMPOTENCY_KEY_REUSED,
            "This Idempotency-Key was used for another request; use a new key.",
          );
        }
        if (!claim || claim.status === undefined) {
          throw errors.conflict(
            ErrorCode.IDEMPOTENCY_KEY_IN_USE,
            "A request with this Idempotency-Key is under way; retry once it has answered.",
          );
        }
        reply
          .code(claim.status)
          .header("idempotent-replayed", "true")
          .type("application/json; charset=utf-8")
          .send(claim.body);
        return { kind: "replayed" };
      }
      return {
        kind: "claimed",
        requestKey: { key: id, fingerprint },
        async settle(status, body) {
          await redis.set(key, JSON.stringify({ fingerprint, status, body } satisfies Claim), "PX", KEPT_MS);
        },
        async release() {
          await redis.del(key);
        },
      };
    },
  };
}
export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;

/**
 * A key that cannot be checked (Redis down or restarting) refuses the write, retryably: running it
 * unchecked could do it twice.
 */
async function unlessDown<T>(command: Promise<T>): Promise<T> {
  try {
    return await command;
  } catch (cause) {
    throw errors.unavailable(
      ErrorCode.SERVICE_UNAVAILABLE,
      "Idempotency-Key cannot be checked right now; try again.",
      { cause },
    );
  }
}
