/** When a call is sent again, and how long the client waits before. */
export interface RetryOptions {
  /** Sends in all, the first included (default 3); 1 never sends again. */
  attempts?: number;
  /** The first wait (default 250 ms), doubled each time up to `maxDelayMs` (5 s); `Retry-After` wins. */
  delayMs?: number;
  maxDelayMs?: number;
}

export type RetryPolicy = Required<RetryOptions>;

export function retryPolicy(options: RetryOptions | false | undefined): RetryPolicy {
  const given = options === false ? { attempts: 1 } : options;
  return {
    attempts: Math.max(1, given?.attempts ?? 3),
    delayMs: given?.delayMs ?? 250,
    maxDelayMs: given?.maxDelayMs ?? 5_000,
  };
}

/**
 * An answer that says "not now" rather than "no": the gateway or a service away or slow (502, 503, 504),
 * or the first run of the call's Idempotency-Key still under way (409 IDEMPOTENCY_KEY_IN_USE).
 */
export const isRetryable = (status: number, code: string | undefined): boolean =>
  status === 502 || status === 503 || status === 504 || (status === 409 && code === "IDEMPOTENCY_KEY_IN_USE");

/** `Retry-After` in ms (seconds or a date), if the answer has one. */
export function retryAfterMs(response: Response): number | undefined {
  const value = response.headers.get("retry-after");
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** The wait before send `attempt + 1`: what the answer asked (`Retry-After`), else backoff; at most the cap. */
export const waitBefore = (attempt: number, policy: RetryPolicy, afterMs: number | undefined): number =>
  Math.min(afterMs ?? policy.delayMs * 2 ** (attempt - 1), policy.maxDelayMs);

/** Waits `ms`, or less: it ends when `signal` aborts (the caller then looks at the signal). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * Whether a call may be sent again after an answer that did not come (the network) or said "not now": a
 * read always; a write when it carries an Idempotency-Key (the gateway then answers its first answer, or
 * runs it once). Sign-up and sign-in get no key of the client's: a sign-in's answer is a token.
 */
export const keysWrites = (method: string, path: string): boolean =>
  method !== "get" && !path.startsWith("/Authentication/");
