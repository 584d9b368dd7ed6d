import { createMemoryAnswers } from "@fundraise/bus/testing";
import { ErrorCode, errors, ProjectsRpc, UsersRpc } from "@fundraise/protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../test/harness.ts";
import { projectDto } from "../test/route-samples.ts";

// Idempotency-Key on writes (rules.md §8.13) against a projects stand-in on the in-memory bus that counts
// what it was asked to do, with the real Redis: one write done per key, its answer again, on any replica.
let h: Harness;
let rated: number[];
let failNext: "unavailable" | "conflict" | null;
let release: (() => void) | null;

beforeEach(async () => {
  h = await createHarness();
  rated = [];
  failNext = null;
  release = null;
  await h.bus.serve(ProjectsRpc.rate, async ({ id, rating }) => {
    if (release) await new Promise<void>((resolve) => (release = resolve));
    const fail = failNext;
    failNext = null;
    if (fail === "unavailable") throw errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, "try again");
    if (fail === "conflict") throw errors.conflict(ErrorCode.PROJECT_NAME_TAKEN, "taken");
    rated.push(rating);
    return { ...projectDto(id), rating };
  });
});
afterEach(() => h?.close());

async function rate(rating: number, key?: string, userId = 5) {
  const token = await h.signer.sign({ userId, role: "Base" });
  return h.app.inject({
    method: "PUT",
    url: `/Project/Rate/1/${rating}`,
    headers: { authorization: `Bearer ${token}`, ...(key === undefined ? {} : { "idempotency-key": key }) },
  });
}

describe("Idempotency-Key", () => {
  it("the same key and request answers the first answer again and does the write once", async () => {
    const first = await rate(4, "key-1");
    const again = await rate(4, "key-1");
    expect(first.statusCode).toBe(200);
    expect(again.statusCode).toBe(200);
    expect(again.body).toBe(first.body);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(rated).toEqual([4]);
    // Without a key, or with another, each request is its own.
    await rate(4);
    await rate(4, "key-2");
    expect(rated).toEqual([4, 4, 4]);
  });

  it("the same key with another request is 409, and does nothing", async () => {
    await rate(4, "key-1");
    const other = await rate(5, "key-1");
    expect(other.statusCode).toBe(409);
    expect(other.headers["x-error-code"]).toBe("IDEMPOTENCY_KEY_REUSED");
    expect(rated).toEqual([4]);
  });

  it("keys are the caller's: another user's same key is another request", async () => {
    await rate(4, "shared");
    expect((await rate(4, "shared", 6)).headers["idempotent-replayed"]).toBeUndefined();
    expect(rated).toEqual([4, 4]);
  });

  it("a request under way with the key: 409 for the second, which may retry once it answered", async () => {
    const holding = () => {};
    release = holding;
    const first = rate(4, "slow");
    // Under way: its write runs (the key claimed before it), the handler has swapped `release` for its own.
    await expect.poll(() => release !== holding, { timeout: 10_000, interval: 5 }).toBe(true);
    const during = await rate(4, "slow");
    expect(during.statusCode).toBe(409);
    expect(during.headers["x-error-code"]).toBe("IDEMPOTENCY_KEY_IN_USE");
    release?.();
    expect((await first).statusCode).toBe(200);
    expect((await rate(4, "slow")).headers["idempotent-replayed"]).toBe("true");
    expect(rated).toEqual([4]);
  });

  it("a failed write frees its key: the retry runs (a 503, a refusal)", async () => {
    failNext = "unavailable";
    expect((await rate(4, "retry")).statusCode).toBe(503);
    expect((await rate(4, "retry")).statusCode).toBe(200);
    failNext = "conflict";
    expect((await rate(3, "refused")).statusCode).toBe(409);
    expect((await rate(3, "refused")).statusCode).toBe(200);
    expect(rated).toEqual([4, 3]);
  });

  it("passes the key on with the RPC: a service that kept the answer gives it to the retry", async () => {
    const answers = createMemoryAnswers();
    h.bus.keepAnswers(answers);
    // As after a 503 whose reply was lost once the write was done: the gateway's claim freed, the
    // service's answer kept.
    const freeKeys = async () => h.redis.del(...(await h.redis.keys(`${h.prefix}idem:*`)));
    const first = await rate(4, "lost");
    await freeKeys();
    const again = await rate(4, "lost");
    expect(again.statusCode).toBe(200);
    expect(again.body).toBe(first.body);
    expect(rated).toEqual([4]);
    // Another request under the key: the service refuses it; another caller's key is another key.
    await freeKeys();
    const other = await rate(5, "lost");
    expect(other.statusCode).toBe(409);
    expect(other.headers["x-error-code"]).toBe("IDEMPOTENCY_KEY_REUSED");
    expect((await rate(4, "lost", 6)).statusCode).toBe(200);
    expect(rated).toEqual([4, 4]);
    expect([...answers.kept.keys()].map((key) => key.split(":")[0])).toEqual(["u5", "u6"]);
  });

  it("reads ignore the key: a GET with one is answered as any other", async () => {
    await h.bus.serve(UsersRpc.count, async () => 7);
    const token = await h.signer.sign({ userId: 5, role: "Admin" });
    const get = () =>
      h.app.inject({
        method: "GET",
        url: "/user/learnusercount",
        headers: { authorization: `Bearer ${token}`, "idempotency-key": "read-1" },
      });
    for (const res of [await get(), await get()]) {
      expect(res.json()).toMatchObject({ data: 7, success: true });
      expect(res.headers["idempotent-replayed"]).toBeUndefined();
    }
    expect(await h.redis.keys(`${h.prefix}idem:*`)).toEqual([]);
  });

  it("a key that is not one token of visible ASCII is 400 before anything is done", async () => {
    for (const key of ["", "a b", "x".repeat(256), "é"]) {
      const res = await rate(4, key);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ success: false, data: null });
    }
    expect(rated).toEqual([]);
  });
});
