import { FINAL_KINDS, isAppError } from "@fundraise/protocol";

export interface RetryPolicy {
  maxAttempts: number;
  retryDelayMs: number;
  maxRetryDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 5,
  retryDelayMs: 1000,
  maxRetryDelayMs: 60_000,
};

export function resolveRetryPolicy(options: Partial<RetryPolicy> = {}): RetryPolicy {
  const maxAttempts = Math.max(1, Math.floor(options.maxAttempts ?? DEFAULT_RETRY_POLICY.maxAttempts));
  const retryDelayMs = Math.max(1, Math.floor(options.retryDelayMs ?? DEFAULT_RETRY_POLICY.retryDelayMs));
  const maxRetryDelayMs = Math.max(
    retryDelayMs,
    Math.floor(options.maxRetryDelayMs ?? Math.max(DEFAULT_RETRY_POLICY.maxRetryDelayMs, retryDelayMs)),
  );
  return { maxAttempts, retryDelayMs, maxRetryDelayMs };
}

/** Delay before the attempt after `failedAttempt` (1-based): retryDelayMs, doubled per attempt, capped. */
export function retryDelay(policy: RetryPolicy, failedAttempt: number): number {
  const exponent = Math.max(0, failedAttempt - 1);
  // 2 ** 1024 is Infinity; min() then caps it, so no overflow guard is needed beyond that.
  return Math.min(policy.maxRetryDelayMs, policy.retryDelayMs * 2 ** exponent);
}

/**
 * Every distinct delay a subscription can use. Each gets its own retry queue with a queue-wide TTL, so a
 * long delay at the head of a queue never holds back a shorter one behind it.
 */
export function retryDelays(policy: RetryPolicy): number[] {
  const delays = new Set<number>();
  for (let attempt = 1; attempt < policy.maxAttempts; attempt++) delays.add(retryDelay(policy, attempt));
  return [...delays].sort((a, b) => a - b);
}

/** False for AppErrors whose kind is final; true for dependency failures and anything unexpected. */
export function isRetryableFailure(error: unknown): boolean {
  return !(isAppError(error) && FINAL_KINDS.has(error.kind));
}

export type FailureDecision =
  | { action: "retry"; delayMs: number; nextAttempt: number }
  | { action: "dead-letter" };

/** What to do with an event whose handling failed on `attempt`. */
export function decideFailure(policy: RetryPolicy, attempt: number, error: unknown): FailureDecision {
  if (!isRetryableFailure(error) || attempt >= policy.maxAttempts) return { action: "dead-letter" };
  return { action: "retry", delayMs: retryDelay(policy, attempt), nextAttempt: attempt + 1 };
}

/** Exponential backoff with jitter (half fixed, half random): a fleet of clients does not reconnect in lockstep. */
export function backoffWithJitter(
  attempt: number,
  baseMs = 100,
  capMs = 5000,
  random: () => number = Math.random,
) {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.max(0, attempt));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
