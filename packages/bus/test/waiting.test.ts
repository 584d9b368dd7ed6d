import { errors } from "@fundraise/protocol";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { createWaitingLog, outageReason } from "../src/waiting.ts";

/** A logger whose lines the test reads back (JSON objects), and a clock it moves. */
function capture(level = "debug") {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  let now = 1_000_000;
  return { lines, log, now: () => now, tick: (ms: number) => (now += ms) };
}

const refused = () =>
  Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED", syscall: "connect" });

describe("outageReason", () => {
  it("reads the cause of a client's own error (fetch failed, a chain client's error)", () => {
    const fetchFailed = new TypeError("fetch failed", { cause: refused() });
    expect(outageReason(new Error("chain request failed", { cause: fetchFailed }))).toBe(
      "connection refused",
    );
    expect(outageReason(new Error("bad response", { cause: new Error("invalid JSON") }))).toBeUndefined();
  });

  it("names refused, unreachable, timed-out and reset connections, by code or by the client's words", () => {
    expect(outageReason(refused())).toBe("connection refused");
    expect(
      outageReason(Object.assign(new Error("getaddrinfo ENOTFOUND rabbit"), { code: "ENOTFOUND" })),
    ).toBe("host not found");
    expect(outageReason(Object.assign(new Error("x"), { code: "EHOSTUNREACH" }))).toBe("host unreachable");
    expect(outageReason(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }))).toBe(
      "connection reset",
    );
    // amqplib's own connect timeout carries no code.
    expect(outageReason(new Error("connect ETIMEDOUT"))).toBe("no answer in time");
    expect(outageReason(new Error("Socket closed abruptly during opening handshake"))).toBe(
      "connection closed during the handshake",
    );
    // pg's pool, and a Postgres that is starting.
    expect(outageReason(new Error("timeout exceeded when trying to connect"))).toBe("no answer in time");
    expect(
      outageReason(
        Object.assign(new Error("the database system is starting up"), { code: "57P03", severity: "FATAL" }),
      ),
    ).toBe("the database system is starting up");
    // Node's connect to a name with several addresses fails with each of them.
    expect(outageReason(Object.assign(new AggregateError([refused(), refused()]), { message: "" }))).toBe(
      "connection refused",
    );
    expect(
      outageReason(errors.unavailable("BROKER_UNAVAILABLE", "The message broker is not reachable.")),
    ).toBe("The message broker is not reachable.");
  });

  it("leaves anything else to be logged with its stack", () => {
    expect(outageReason(new Error("Handshake terminated by server: 403 (ACCESS-REFUSED)"))).toBeUndefined();
    expect(
      outageReason(Object.assign(new Error("password authentication failed"), { code: "28P01" })),
    ).toBeUndefined();
    expect(outageReason(errors.validation("VALIDATION_FAILED", "bad"))).toBeUndefined();
    expect(outageReason("ECONNREFUSED")).toBeUndefined();
    expect(outageReason(undefined)).toBeUndefined();
  });
});

describe("createWaitingLog", () => {
  it("one line at the first failure, then after 1 s, 5 s, 30 s and 60 s, then once a minute; one line when back", () => {
    const c = capture();
    const waiting = createWaitingLog({
      log: c.log,
      what: "the message broker",
      url: "amqp://guest:s3cret@127.0.0.1:1/vh",
      now: c.now,
    });
    // An attempt every 100 ms for three minutes: 1,800 failures.
    for (let attempt = 0; attempt < 1_800; attempt++) {
      waiting.failed(refused());
      c.tick(100);
    }
    expect(c.lines.map((l) => l.waitedSeconds)).toEqual([0, 1, 5, 30, 60, 120]);
    expect(c.lines[0]).toMatchObject({
      level: 40,
      attempts: 1,
      reason: "connection refused",
      url: "amqp://guest:***@127.0.0.1:1/vh",
      msg: "waiting for the message broker at amqp://guest:***@127.0.0.1:1/vh — connection refused; retrying",
    });
    expect(c.lines[2]?.msg).toBe(
      "still waiting for the message broker at amqp://guest:***@127.0.0.1:1/vh — connection refused; 51 attempts in 5 s; retrying",
    );
    expect(c.lines.every((l) => l.err === undefined)).toBe(true);
    expect(waiting.waiting).toBe(true);

    expect(waiting.connected()).toBe(true);
    expect(c.lines.at(-1)).toMatchObject({
      level: 30,
      attempts: 1_800,
      msg: "connected to the message broker again after 1800 failed attempts, 180 s",
    });
    expect(waiting.waiting).toBe(false);
    // Connected with nothing failed: nothing to say (the caller says it connected).
    expect(waiting.connected()).toBe(false);
    expect(c.lines).toHaveLength(7);
    expect(JSON.stringify(c.lines)).not.toContain("s3cret");
  });

  it("starts afresh after a success: the next outage gets its own first line", () => {
    const c = capture();
    const waiting = createWaitingLog({ log: c.log, what: "Redis", now: c.now });
    waiting.failed(refused());
    c.tick(2_000);
    waiting.failed(refused());
    waiting.connected();
    c.tick(60_000);
    waiting.failed(refused());
    expect(c.lines.map((l) => l.msg)).toEqual([
      "waiting for Redis — connection refused; retrying",
      "still waiting for Redis — connection refused; 2 attempts in 2 s; retrying",
      "connected to Redis again after 2 failed attempts, 2 s",
      "waiting for Redis — connection refused; retrying",
    ]);
  });

  it("keeps the stack of an unexpected failure, without the password in it", () => {
    const c = capture();
    const waiting = createWaitingLog({
      log: c.log,
      what: "the database",
      url: "postgres://app:hunter22@db/app",
      now: c.now,
    });
    waiting.failed(new Error("password authentication failed for hunter22"));
    const [line] = c.lines as [Record<string, { stack?: string; message?: string }>];
    expect(line.err?.stack).toContain("waiting.test.ts");
    expect(line.err?.message).toBe("password authentication failed for ***");
    expect(JSON.stringify(c.lines)).not.toContain("hunter22");
  });

  it("at outageLevel debug, an outage is debug and the unexpected still warn", () => {
    const c = capture("info");
    const waiting = createWaitingLog({
      log: c.log,
      what: "the message broker",
      outageLevel: "debug",
      now: c.now,
    });
    waiting.failed(refused());
    c.tick(1_000);
    waiting.failed(new Error("Handshake terminated by server: 403 (ACCESS-REFUSED)"));
    waiting.connected();
    expect(c.lines.map((l) => [l.level, l.msg])).toEqual([
      [
        40,
        "still waiting for the message broker — Handshake terminated by server: 403 (ACCESS-REFUSED); 2 attempts in 1 s; retrying",
      ],
    ]);
  });

  it("names what waits (a row, a request) on the line it logs", () => {
    const c = capture();
    const waiting = createWaitingLog({ log: c.log, what: "the message broker", now: c.now });
    waiting.failed(errors.unavailable("BROKER_UNAVAILABLE", "The message broker is not reachable."), {
      event: "users.user.deleted",
      messageId: "m-1",
    });
    expect(c.lines[0]).toMatchObject({
      event: "users.user.deleted",
      messageId: "m-1",
      reason: "The message broker is not reachable.",
    });
  });

  it("tells readiness when it starts and stops waiting", () => {
    const c = capture();
    const changes: boolean[] = [];
    const waiting = createWaitingLog({
      log: c.log,
      what: "Redis",
      now: c.now,
      onWaiting: (w) => changes.push(w),
    });
    waiting.failed(refused());
    waiting.failed(refused());
    waiting.connected();
    expect(changes).toEqual([true, false]);
    // Given up (the process stops while it waits): no longer waiting, and nothing said.
    waiting.failed(refused());
    const said = c.lines.length;
    waiting.abandon();
    expect(changes).toEqual([true, false, true, false]);
    expect(c.lines).toHaveLength(said);
  });
});
