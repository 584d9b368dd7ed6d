import { errors } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import {
  backoffWithJitter,
  decideFailure,
  isRetryableFailure,
  resolveRetryPolicy,
  retryDelay,
  retryDelays,
} from "../src/retry.ts";

describe("retry policy", () => {
  const policy = resolveRetryPolicy({ maxAttempts: 6, retryDelayMs: 100, maxRetryDelayMs: 500 });

  it("doubles the delay per failed attempt up to the cap", () => {
    expect([1, 2, 3, 4, 5].map((attempt) => retryDelay(policy, attempt))).toEqual([100, 200, 400, 500, 500]);
  });

  it("never overflows for absurd attempt numbers", () => {
    expect(retryDelay(policy, 5000)).toBe(500);
  });

  it("lists each distinct delay once: one retry queue per delay", () => {
    expect(retryDelays(policy)).toEqual([100, 200, 400, 500]);
    expect(retryDelays(resolveRetryPolicy({ maxAttempts: 1 }))).toEqual([]);
  });

  it("uses 5 attempts, 1 s and 60 s by default, and sane bounds", () => {
    expect(resolveRetryPolicy()).toEqual({ maxAttempts: 5, retryDelayMs: 1000, maxRetryDelayMs: 60_000 });
    expect(resolveRetryPolicy({ maxAttempts: 0, retryDelayMs: 5000, maxRetryDelayMs: 10 })).toEqual({
      maxAttempts: 1,
      retryDelayMs: 5000,
      maxRetryDelayMs: 5000,
    });
  });

  it("retries dependency failures and surprises, not refusals", () => {
    expect(isRetryableFailure(new Error("boom"))).toBe(true);
    expect(isRetryableFailure(errors.unavailable("DB_UNAVAILABLE", "down"))).toBe(true);
    expect(isRetryableFailure(errors.timeout("RPC_TIMEOUT", "slow"))).toBe(true);
    expect(isRetryableFailure(errors.internal("INTERNAL", "bug"))).toBe(true);
    expect(isRetryableFailure(errors.validation("VALIDATION_FAILED", "bad"))).toBe(false);
    expect(isRetryableFailure(errors.notFound("PROJECT_NOT_FOUND", "gone"))).toBe(false);
    expect(isRetryableFailure(errors.conflict("INVITATION_EXISTS", "dup"))).toBe(false);
    expect(isRetryableFailure(errors.forbidden("ROLE_FORBIDDEN", "no"))).toBe(false);
  });

  it("retries until the last attempt, then dead-letters", () => {
    expect(decideFailure(policy, 1, new Error("x"))).toEqual({
      action: "retry",
      delayMs: 100,
      nextAttempt: 2,
    });
    expect(decideFailure(policy, 5, new Error("x"))).toEqual({
      action: "retry",
      delayMs: 500,
      nextAttempt: 6,
    });
    expect(decideFailure(policy, 6, new Error("x"))).toEqual({ action: "dead-letter" });
    expect(decideFailure(policy, 1, errors.validation("VALIDATION_FAILED", "bad"))).toEqual({
      action: "dead-letter",
    });
  });

  it("spreads reconnects with jitter under a cap", () => {
    expect(backoffWithJitter(0, 100, 5000, () => 0)).toBe(50);
    expect(backoffWithJitter(0, 100, 5000, () => 1)).toBe(100);
    expect(backoffWithJitter(3, 100, 5000, () => 0.5)).toBe(600);
    expect(backoffWithJitter(30, 100, 5000, () => 1)).toBe(5000);
    expect(backoffWithJitter(30, 100, 5000, () => 0)).toBe(2500);
  });
});
