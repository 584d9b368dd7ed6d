import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRpcAnswers, rpcAnswerClaimDdl, rpcAnswerClaimUndoDdl, rpcAnswerDdl } from "../src/index.ts";
import { createTestDatabase, sleep, type TestDatabase, testLogger } from "./helpers.ts";

// The answers to keyed RPCs in `<schema>.rpc_answer` (a service's `bus.keepAnswers`), on the local Postgres.
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query("CREATE SCHEMA users");
  await db.pool.query(rpcAnswerDdl("users"));
  await db.pool.query(rpcAnswerClaimDdl("users"));
});

afterAll(async () => {
  await db?.dispose();
});

const answersOf = (keptMs?: number, claimMs?: number) =>
  createRpcAnswers(db.pool, {
    schema: "users",
    logger: testLogger(),
    ...(keptMs ? { keptMs } : {}),
    ...(claimMs ? { claimMs } : {}),
  });
const ok = (data: unknown) => ({ data, success: true, message: null });

describe("rpc answers", () => {
  it("keeps the first answer of a key, as it was sent", async () => {
    const answers = answersOf();
    expect(await answers.find("u1:a")).toBeNull();
    // Keys in an order jsonb would not keep; a note beside the data.
    const envelope = { data: { zeta: 1, id: "7", alpha: [null, "x"] }, success: true, message: "noted" };
    await answers.keep("u1:a", "f1", envelope);
    await answers.keep("u1:a", "f2", { data: null, success: true, message: null });
    const kept = await answers.find("u1:a");
    expect(kept).toEqual({ fingerprint: "f1", envelope });
    expect(Object.keys((kept as { envelope: { data: object } }).envelope.data)).toEqual([
      "zeta",
      "id",
      "alpha",
    ]);
    expect(await answers.find("u2:a")).toBeNull();
  });

  it("forgets an answer past its time: not found, replaced by the next one kept, pruned", async () => {
    await db.pool.query("DELETE FROM users.rpc_answer");
    // Kept 1 s: what is kept afresh below must still be there when it is read back, on a slow machine too.
    const answers = answersOf(1_000);
    await answers.keep("u1:old", "f1", { data: 1, success: true, message: null });
    await answers.keep("u1:gone", "f1", { data: 2, success: true, message: null });
    await sleep(1_100);
    expect(await answers.find("u1:old")).toBeNull();
    await answers.keep("u1:old", "f2", { data: 3, success: true, message: null });
    expect(await answers.find("u1:old")).toEqual({
      fingerprint: "f2",
      envelope: { data: 3, success: true, message: null },
    });
    expect(await answers.prune()).toBe(1);
    const { rows } = await db.pool.query("SELECT key FROM users.rpc_answer");
    expect(rows).toEqual([{ key: "u1:old" }]);
  });

  it("lets one run at a time hold a key: the others find it held, then its answer", async () => {
    const answers = answersOf();
    // Ten copies of one request at once, as replicas and retries would bring them: one claims.
    const found = await Promise.all(Array.from({ length: 10 }, () => answers.claim("u3:a", "f1")));
    expect(found.filter((f) => f.kind === "claimed")).toHaveLength(1);
    expect(found.filter((f) => f.kind === "held")).toEqual(
      Array(9).fill({ kind: "held", fingerprint: "f1" }),
    );
    expect(await answers.claim("u3:a", "f2")).toEqual({ kind: "held", fingerprint: "f1" });
    await answers.keep("u3:a", "f1", ok(7));
    expect(await answers.claim("u3:a", "f1")).toEqual({
      kind: "kept",
      answer: { fingerprint: "f1", envelope: ok(7) },
    });
  });

  it("frees a key its run released (a failure), and one whose run never ended once the claim lapsed", async () => {
    // A claim lapses after 1 s: the four statements before the wait must fall within it, on a slow machine too.
    const answers = answersOf(undefined, 1_000);
    expect(await answers.claim("u3:b", "f1")).toEqual({ kind: "claimed" });
    await answers.release("u3:b");
    expect(await answers.claim("u3:b", "f1")).toEqual({ kind: "claimed" });
    expect(await answers.claim("u3:b", "f1")).toEqual({ kind: "held", fingerprint: "f1" });
    await sleep(1_100);
    // The run that held it crashed: the next copy claims it, and its answer is the one kept.
    expect(await answers.claim("u3:b", "f1")).toEqual({ kind: "claimed" });
    await answers.keep("u3:b", "f1", ok("second"));
    expect(await answers.find("u3:b")).toEqual({ fingerprint: "f1", envelope: ok("second") });
    // Releasing never drops an answer.
    await answers.release("u3:b");
    expect(await answers.find("u3:b")).toEqual({ fingerprint: "f1", envelope: ok("second") });
  });

  it("undoes the claims' migration and applies it again (down, up): answers stay, claims under way go", async () => {
    await db.pool.query("CREATE SCHEMA redo");
    await db.pool.query(rpcAnswerDdl("redo") + rpcAnswerClaimDdl("redo"));
    const answers = createRpcAnswers(db.pool, { schema: "redo", logger: testLogger() });
    await answers.keep("u4:a", "f1", ok(1));
    expect(await answers.claim("u4:b", "f1")).toEqual({ kind: "claimed" });
    await db.pool.query(rpcAnswerClaimUndoDdl("redo"));
    const { rows } = await db.pool.query("SELECT key FROM redo.rpc_answer");
    expect(rows).toEqual([{ key: "u4:a" }]);
    await db.pool.query(rpcAnswerClaimDdl("redo"));
    expect(await answers.claim("u4:b", "f1")).toEqual({ kind: "claimed" });
  });

  it("prunes a bounded batch at a time", async () => {
    await db.pool.query(
      `INSERT INTO users.rpc_answer (key, fingerprint, envelope, created_at)
       SELECT 'bulk:' || n, 'f', '{"data":null,"success":true,"message":null}', now() - interval '2 days'
       FROM generate_series(1, 1001) AS n`,
    );
    const answers = answersOf();
    expect(await answers.prune()).toBe(1000);
    expect(await answers.prune()).toBe(1);
    expect(await answers.prune()).toBe(0);
  });
});
