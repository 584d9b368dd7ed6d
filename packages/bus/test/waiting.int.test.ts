import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AmqpBus, createAmqpBus } from "../src/index.ts";
import {
  createTcpGate,
  createTestVhost,
  type TcpGate,
  type TestVhost,
  waitFor,
} from "../src/testing/index.ts";

// What a process logs while the broker does not answer, on the real broker behind a gate the test opens
// and shuts (nothing listens on the gate's port while it is shut: connections are refused).
let vhost: TestVhost;
let gate: TcpGate;
let url: string;
beforeAll(async () => {
  vhost = await createTestVhost("waiting");
  const broker = new URL(vhost.url);
  gate = await createTcpGate({ host: broker.hostname, port: Number(broker.port || 5672) });
  broker.port = String(gate.port);
  url = broker.toString();
});
afterAll(async () => {
  await gate?.shut();
  await vhost?.dispose();
});

function capture() {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const logger = pino(
    { level: "info" },
    {
      write: (line: string) => {
        raw.push(line);
        lines.push(JSON.parse(line));
      },
    },
  );
  return { lines, raw, logger };
}

const password = (u: string) => decodeURIComponent(new URL(u).password);

describe("a bus whose broker does not answer", () => {
  it("waits quietly: one line per burst, no stack, no password; one line when it connects", async () => {
    const { lines, raw, logger } = capture();
    const started = performance.now();
    const starting = createAmqpBus({
      url,
      service: "waiting",
      logger,
      connectTimeoutMs: Number.POSITIVE_INFINITY,
    });
    let bus: AmqpBus | undefined;
    try {
      // The first line at once, the next once a second has passed; attempts go on every few 100 ms.
      await waitFor(() => lines.length >= 2, 15_000, "two waiting lines");
      const waited = (performance.now() - started) / 1000;
      // Lines are due at 0, 1, 5, 30 s: never more than those the time waited allows, however slow the machine.
      expect(lines.length).toBeLessThanOrEqual(1 + [1, 5, 30, 60].filter((s) => s <= waited + 0.5).length);
      expect(lines[0]).toMatchObject({
        level: 40,
        attempts: 1,
        reason: "connection refused",
        url: expect.stringContaining(":***@127.0.0.1:"),
      });
      expect(String(lines[0]?.msg)).toMatch(
        /^waiting for the message broker at amqp:\/\/.*:\*\*\*@.* — connection refused; retrying$/,
      );
      expect(String(lines[1]?.msg)).toMatch(
        /^still waiting for the message broker .* \d+ attempts in [\d.]+ s; retrying$/,
      );
      expect(Number(lines[1]?.attempts)).toBeGreaterThan(1);

      const before = lines.length;
      await gate.open();
      bus = await starting;
      const after = lines.slice(before).map((l) => l.msg);
      expect(after).toEqual([
        expect.stringMatching(/^connected to the message broker again after \d+ failed attempts?, [\d.]+ s$/),
      ]);

      // Lost later: one line for the loss, then the same waiting lines, then one when it is back.
      const connectedAt = lines.length;
      await gate.shut();
      await waitFor(
        () => lines.some((l, i) => i >= connectedAt && String(l.msg).startsWith("waiting for")),
        15_000,
        "the waiting line",
      );
      await gate.open();
      await bus.waitForConnection(30_000);
      await waitFor(
        () => String(lines.at(-1)?.msg).startsWith("connected to the message broker again"),
        5_000,
        "the line",
      );
      const outage = lines.slice(connectedAt).map((l) => String(l.msg));
      expect(outage[0]).toMatch(/^lost the message broker connection \(.+\); reconnecting$/);
      expect(outage[1]).toMatch(/^waiting for the message broker .* — connection refused; retrying$/);
      expect(outage.at(-1)).toMatch(/^connected to the message broker again after \d+ failed attempts?, /);
      expect(outage.length).toBeLessThanOrEqual(6);
    } finally {
      await gate.open();
      await (bus ?? (await starting.catch(() => undefined)))?.close();
    }
    for (const line of raw) {
      expect(line).not.toContain('"stack"');
      expect(line).not.toContain(`:${password(url)}@`);
    }
  });

  it("gives up after connectTimeoutMs when one is set, having said it waits", async () => {
    await gate.shut();
    const { lines, logger } = capture();
    await expect(
      createAmqpBus({ url, service: "waiting", logger, connectTimeoutMs: 1_500 }),
    ).rejects.toMatchObject({
      code: "BROKER_UNAVAILABLE",
    });
    expect(lines[0]?.msg).toMatch(/^waiting for the message broker/);
    expect(lines.length).toBeLessThanOrEqual(3);
  });
});
