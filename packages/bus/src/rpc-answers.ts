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

/** Where a service keeps its answers to keyed requests (@fundraise/outbox `createRpcAnswers`: a table). */
export interface RpcAnswers {
  find(key: string): Promise<KeptAnswer | null>;
  /** Keeps a success's answer; a key already kept keeps its first answer. */
  keep(key: string, fingerprint: string, envelope: Envelope<unknown>): Promise<void>;
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
 * The reply to a request: for a keyed one whose answer is kept, that answer again (marked `x-replayed`,
 * which the gateway answers as `Idempotent-Replayed: true`), without running `handle`; the kept key with another request, 409 IDEMPOTENCY_KEY_REUSED. Otherwise `handle`'s reply;
 * a keyed success is kept before it goes out (its reply may be the one that is lost). A failure keeps
 * nothing: a failed write did nothing (writes are transactions), so the retry runs it. There is no claim:
 * two runs of one key at once both run, and the write meets itself as without a key.
 */
export async function answerOnce(
  answers: RpcAnswers | undefined,
  key: RequestKey | undefined,
  log: Logger,
  handle: () => Promise<ReplyParts>,
): Promise<ReplyParts> {
  if (!answers || !key) return handle();
  const kept = await answers.find(key.key);
  if (kept) {
    if (kept.fingerprint !== key.fingerprint) {
      throw errors.conflict(
        ErrorCode.IDEMPOTENCY_KEY_REUSED,
        "This Idempotency-Key was used for another request; use a new key.",
      );
    }
    log.info("keyed request answered with its kept answer");
    return { envelope: kept.envelope, headers: { [Header.REPLAYED]: "true" } };
  }
  const reply = await handle();
  try {
    await answers.keep(key.key, key.fingerprint, reply.envelope);
  } catch (err) {
    // The write is done: it is answered all the same, and a retry after a lost reply runs it again.
    log.warn({ err }, "answer to a keyed request not kept");
  }
  return reply;
}
