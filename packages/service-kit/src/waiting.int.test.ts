import { createTcpGate, type TcpGate, waitFor } from "@fundraise/bus/testing";
import { Redis } from "ioredis";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { waitForDatabase } from "./database-wait.ts";
import { waitingFor, watchRedis } from "./waiting.ts";

// What a service logs while Postgres or Redis does not answer: the real servers behind a gate the test
// opens and shuts (shut, nothing listens on its port: connections are refused). The servers stay up.
const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

function capture() {
  const raw: string[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void raw.push(line) });
  const lines = () => raw.map((line) => JSON.parse(line) as Record<string, unknown>);
  return { raw, logger, lines };
}

/** `url` with the gate's port and `password` in it (never to appear in a line). */
function through(gate: TcpGate, url: string, password: string): string {
  const gated = new URL(url);
  gated.port = String(gate.port);
  if (!gated.username) gated.username = gated.protocol === "redis:" ? "default" : "postgres";
  gated.password = password;
  return gated.toString();
}

const gates: TcpGate[] = [];
afterEach(async () => {
  for (const gate of gates.splice(0)) await gate.shut();
});

async function gateTo(url: string): Promise<TcpGate> {
  const target = new URL(url);
  const gate = await createTcpGate({ host: target.hostname, port: Number(target.port) });
  gates.push(gate);
  return gate;
}

describe("waitForDatabase", () => {
  it("waits for a database that refuses connections: one line per burst, no stack, no password; one line once it answers", async () => {
    const gate = await gateTo(DATABASE_URL);
    // The local server trusts loopback connections: the password only has to stay out of the log.
    const url = through(gate, DATABASE_URL, "pg-s3cret");
    const { raw, logger, lines } = capture();
    const started = performance.now();
    const waited = waitForDatabase(url, { log: logger });
    await waitFor(() => raw.length >= 2, 15_000, "two waiting lines");
    expect(waitingFor()).toEqual(["the database"]);
    const seconds = (performance.now() - started) / 1000;
    // Lines are due at 0, 1, 5, 30 s since the first failure: never more than the time waited allows.
    expect(raw.length).toBeLessThanOrEqual(1 + [1, 5, 30].filter((s) => s <= seconds + 0.5).length);
    expect(lines()[0]).toMatchObject({
      level: 40,
      attempts: 1,
      reason: "connection refused",
      msg: expect.stringMatching(
        /^waiting for the database at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/.* — connection refused; retrying$/,
      ),
    });

    const before = raw.length;
    await gate.open();
    await waited;
    expect(
      lines()
        .slice(before)
        .map((l) => l.msg),
    ).toEqual([
      expect.stringMatching(/^connected to the database again after \d+ failed attempts?, [\d.]+ s$/),
    ]);
    expect(waitingFor()).toEqual([]);
    for (const line of raw) {
      expect(line).not.toContain('"stack"');
      expect(line).not.toContain("pg-s3cret");
    }
  });

  it("says nothing when the database answers at once; stops waiting when told to", async () => {
    const { raw, logger } = capture();
    await waitForDatabase(DATABASE_URL, { log: logger });
    expect(raw).toEqual([]);

    const stop = new AbortController();
    const waiting = waitForDatabase("postgres://postgres@127.0.0.1:1/none", {
      log: logger,
      signal: stop.signal,
    });
    await waitFor(() => raw.length >= 1, 10_000, "the waiting line");
    stop.abort(new Error("shutting down"));
    await expect(waiting).rejects.toThrow("shutting down");
  });
});

describe("watchRedis", () => {
  it("one line per burst while Redis refuses connections, one for a lost connection, one when it is back", async () => {
    const gate = await gateTo(REDIS_URL);
    // Redis without a password (the local one) answers AUTH with a warning only; none is sent here.
    const gated = new URL(REDIS_URL);
    gated.port = String(gate.port);
    const { raw, logger, lines } = capture();
    const redis = new Redis(gated.toString(), { maxRetriesPerRequest: 1, lazyConnect: true });
    watchRedis(redis, { log: logger, url: through(gate, REDIS_URL, "redis-s3cret") });
    try {
      const started = performance.now();
      await redis.connect().catch(() => undefined);
      await waitFor(() => raw.length >= 2, 15_000, "two waiting lines");
      const seconds = (performance.now() - started) / 1000;
      expect(raw.length).toBeLessThanOrEqual(1 + [1, 5, 30].filter((s) => s <= seconds + 0.5).length);
      expect(lines()[0]).toMatchObject({ level: 40, reason: "connection refused" });
      expect(String(lines()[0]?.msg)).toMatch(
        /^waiting for Redis at redis:\/\/default:\*\*\*@127\.0\.0\.1:\d+ — connection refused; retrying$/,
      );

      let before = raw.length;
      await gate.open();
      await waitFor(() => redis.status === "ready", 15_000, "Redis ready");
      expect(
        lines()
          .slice(before)
          .map((l) => l.msg),
      ).toEqual([expect.stringMatching(/^connected to Redis again after \d+ failed attempts?, [\d.]+ s$/)]);

      // Lost while in use: one line for the loss, the waiting lines, one when it is back.
      before = raw.length;
      await gate.shut();
      await waitFor(
        () => lines().some((l, i) => i >= before && String(l.msg).startsWith("waiting for Redis")),
        15_000,
        "the waiting line",
      );
      await gate.open();
      await waitFor(() => redis.status === "ready", 15_000, "Redis ready again");
      const outage = lines()
        .slice(before)
        .map((l) => String(l.msg));
      expect(outage[0]).toMatch(/^lost the Redis connection; reconnecting$/);
      expect(outage[1]).toMatch(/^waiting for Redis .* — connection refused; retrying$/);
      expect(outage.at(-1)).toMatch(/^connected to Redis again after \d+ failed attempts?, /);
    } finally {
      redis.disconnect();
    }
    for (const line of raw) {
      expect(line).not.toContain('"stack"');
      expect(line).not.toContain("redis-s3cret");
    }
  });
});
