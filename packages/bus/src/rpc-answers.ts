import { type Envelope, ErrorCode, errors } from "@fundraise/protocol";
import type { Logger } from "pino";
import { Header, type Headers, type ReplyParts, stringHeader } from "./headers.ts";

/**
 * A write's `Idempotency-Key` as the gateway passes it on with the RPC (docs/adr/0029-idempotency-keys.md).
 * The gateway's Redis answers a repeated key while it holds the first answer; a reply lost on the way
 * back (the gateway's broker connection died after the service committed) leaves it nothing to answer,
 * so the service keeps the answer too and gives it to the retry, wherever it arrives.
 */
export interface RequestKey {
  /** The key, named with its caller: the same key from another caller is another key. */
  key: string;
  /** What the request asked (caller left out): another request under the key is refused. */
  fingerprint: string;
}

/** The first answer of a keyed request, as a service keeps it. */
export interface KeptAnswer {
  fingerprint: string;
  envelope: Envelope<unknown>;
}

/** What a keyed request finds when it claims its key. */
export type KeyClaim =
  | { kind: "claimed" }
  | { kind: "kept"; answer: KeptAnswer }
  /** Another run of the key is under way (its claim lapses by itself if that run never ends). */
  | { kind: "held"; fingerprint: string };

/** Where a service keeps its answers to keyed requests (@fundraise/outbox `createRpcAnswers`: a table). */
export interface RpcAnswers {
  /** Claims `key` for one run of the request, unless an answer is kept under it or a run holds it. */
  claim(key: string, fingerprint: string): Promise<KeyClaim>;
  /** Keeps a success's answer under the key this run claimed. */
  keep(key: string, fingerprint: string, envelope: Envelope<unknown>): Promise<void>;
  /** Frees the key this run claimed: the run failed, and a failed write did nothing. */
  release(key: string): Promise<void>;
}

/** The headers that carry `key` with a request (none without one). */
export function requestKeyHeaders(key: RequestKey | undefined): Headers {
  if (!key) return {};
  return { [Header.IDEMPOTENCY_KEY]: key.key, [Header.REQUEST_FINGERPRINT]: key.fingerprint };
}

/** The key a request carries, if it carries both halves. */
export function requestKeyOf(headers: Headers | undefined): RequestKey | undefined {
  const key = stringHeader(headers, Header.IDEMPOTENCY_KEY);
  const fingerprint = stringHeader(headers, Header.REQUEST_FINGERPRINT);
  return key === undefined || fingerprint === undefined ? undefined : { key, fingerprint };
}

/**
 * The reply to a request: a keyed one claims its key first, so that one run at a time does the write,
 * wherever the copies arrive. A key whose answer is kept gets that answer again (marked `x-replayed`,
 * which the gateway answers as `Idempotent-Replayed: true`) without running `handle`; a key that a run
 * holds, 409 IDEMPOTENCY_KEY_IN_USE (retry once it has answered); either with another request, 409
 * IDEMPOTENCY_KEY_REUSED. Otherwise `handle`'s reply: a success is kept before it goes out (its reply may
 * be the one that is lost), a failure frees the key (a failed write did nothing: the retry runs it).
 */
export async function answerOnce(
  answers: RpcAnswers | undefined,
  key: RequestKey | undefined,
  log: Logger,
  handle: () => Promise<ReplyParts>,
): Promise<ReplyParts> {
  if (!answers || !key) return handle();
  const found = await answers.claim(key.key, key.fingerprint);
  if (found.kind !== "claimed") {
    const fingerprint = found.kind === "kept" ? found.answer.fingerprint : found.fingerprint;
    if (fingerprint !== key.fingerprint) {
      throw errors.conflict(
        ErrorCode.IDEMPOTENCY_KEY_REUSED,
        "This Idempotency-Key was used for another request; use a new key.",
      );
    }
    if (found.kind === "held") {
      throw errors.conflict(
        ErrorCode.IDEMPOTENCY_KEY_IN_USE,
        "A request with this Idempotency-Key is under way; retry once it has answered.",
      );
    }
    log.info("keyed request answered with its kept answer");
    return { envelope: found.answer.envelope, headers: { [Header.REPLAYED]: "true" } };
  }
  let reply: ReplyParts;
  try {
    reply = await handle();
  } catch (error) {
    // Not freed (the store is down): the claim lapses by itself, and the retry waits for it.
    await answers
      .release(key.key)
      .catch((err: unknown) => log.warn({ err }, "keyed request's claim not freed"));
    throw error;
  }
  try {
    await answers.keep(key.key, key.fingerprint, reply.envelope);
  } catch (err) {
    // The write is done: it is answered all the same; a retry after a lost reply waits for the claim to
    // lapse, then runs it again and meets it as a write without a key.
    log.warn({ err }, "answer to a keyed request not kept");
  }
  return reply;
}
