import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { type AmqpBus, createAmqpBus } from "@fundraise/bus";
import { createTcpGate, createTestVhost, type TestVhost, waitFor } from "@fundraise/bus/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "./logger.ts";
import { createProcessMetrics, type ProcessMetrics } from "./metrics.ts";
import { ExhaustedDatabaseRpc, SlowRpc, UnreachableDatabaseRpc } from "./test/fixture-rpc.ts";

// The one shutdown order of every service (run-service.ts), checked on a real process and broker.
let vhost: TestVhost;
let client: AmqpBus;
// The test process's own registry: the client side of the calls.
let clientMetrics: ProcessMetrics;
beforeAll(async () => {
  vhost = await createTestVhost("run_service");
  clientMetrics = createProcessMetrics();
  client = await createAmqpBus({
    url: vhost.url,
    service: "test-client",
    logger: silentLogger(),
    metrics: clientMetrics.bus,
  });
});
afterAll(async () => {
  await client?.close();
  await vhost?.dispose();
});

function startFixture(env: Record<string, string> = {}): { child: ChildProcess; output: () => string } {
  let output = "";
  const child = spawn(
    process.execPath,
    ["--import", "tsx", join(import.meta.dirname, "test", "run-service-fixture.ts")],
    {
      env: { ...process.env, AMQP_URL: vhost.url, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  child.stdout?.on("data", (chunk) => (output += chunk));
  child.stderr?.on("data", (chunk) => (output += chunk));
  return { child, output: () => output };
}

const steps = (output: string) =>
  output
    .split("\n")
    .filter((line) => line.startsWith("step:"))
    .map((line) => line.slice(5));

describe("runService", () => {
  it("on SIGTERM: intake, then consumers (a running handler finishes and answers), outbox, bus, app; exit 0", async () => {
    const { child, output } = startFixture();
    await waitFor(() => steps(output()).includes("ready"), 30_000, "the fixture service");
    const call = client.call(SlowRpc, { ms: 700 }, { timeoutMs: 10_000 });
    await waitFor(() => steps(output()).includes("handler started"), 10_000, "the handler");
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    child.kill("SIGTERM");

    await expect(call).resolves.toBe("done");
    expect(await exited).toBe(0);
    expect(steps(output())).toEqual([
      "ready",
      "handler started",
      "intake",
      "handler finished",
      "outbox relay",
      "app",
    ]);
  }, 60_000);

  it("serves /healthz, /readyz and /metrics on HEALTH_PORT; readiness turns 503 once shutdown begins", async () => {
    const port = await freePort();
    const { child, output } = startFixture({ HEALTH_PORT: String(port) });
    const get = (path: string) => fetch(`http://127.0.0.1:${port}${path}`);
    await waitFor(() => steps(output()).includes("ready"), 30_000, "the fixture service");
    await waitFor(async () => (await get("/readyz").catch(() => undefined))?.status === 200, 10_000, "ready");

    expect(await (await get("/healthz")).json()).toEqual({ alive: true });
    expect(await (await get("/readyz")).json()).toEqual({ ready: true, fixture: "fine" });
    const metrics = await (await get("/metrics")).text();
    expect(metrics).toContain('service_info{service="fixture"} 1');
    expect(metrics).toContain("bus_connected 1");
    expect(metrics).toContain("fixture_calls 3");
    expect((await get("/nothing")).status).toBe(404);

    // A slow handler holds the shutdown open: the probe sees "not ready" while the service drains.
    const call = client.call(SlowRpc, { ms: 1_500 }, { timeoutMs: 10_000 });
    await waitFor(() => steps(output()).includes("handler started"), 10_000, "the handler");
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    await waitFor(async () => (await get("/readyz").catch(() => undefined))?.status === 503, 5_000, "503");
    expect(await (await get("/readyz")).json()).toEqual({ ready: false, reason: "shutting down" });
    await expect(call).resolves.toBe("done");
    expect(await exited).toBe(0);
  }, 60_000);

  it("a database failure a handler meets outside a transaction is answered 503 DB_UNAVAILABLE, not 500", async () => {
    const { child, output } = startFixture();
    await waitFor(() => steps(output()).includes("ready"), 30_000, "the fixture service");
    try {
      await expect(client.call(ExhaustedDatabaseRpc, {}, { timeoutMs: 10_000 })).rejects.toMatchObject({
        kind: "unavailable",
        code: "DB_UNAVAILABLE",
      });
    } finally {
      child.kill("SIGTERM");
    }
  }, 60_000);

  it("a start that fails half-way closes what the app had opened, and exits 1", async () => {
    const { child, output } = startFixture({ FAIL_START: "1" });
    const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
    expect(code).toBe(1);
    expect(steps(output())).toEqual(["app"]);
  }, 60_000);

  it("waits for a broker that does not answer: /readyz 503, one line per burst, no stack or password; then serves", async () => {
    // The broker behind a gate: shut, nothing listens on its port (connections refused), as when RabbitMQ is
    // not running; opened, the same process connects and serves, without a restart.
    const broker = new URL(vhost.url);
    const gate = await createTcpGate({ host: broker.hostname, port: Number(broker.port || 5672) });
    broker.port = String(gate.port);
    const port = await freePort();
    const { child, output } = startFixture({
      AMQP_URL: broker.toString(),
      HEALTH_PORT: String(port),
      FIXTURE_LOG_LEVEL: "info",
    });
    const lines = () =>
      output()
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    const waitingLines = () => lines().filter((l) => /waiting for the message broker/.test(String(l.msg)));
    try {
      await waitFor(() => waitingLines().length >= 2, 30_000, "two waiting lines");
      const readiness = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(readiness.status).toBe(503);
      expect(await readiness.json()).toEqual({ ready: false, reason: "waiting for the message broker" });
      // Seconds of refused attempts: a line at the first, one after 1 s (then 5 s, 30 s), not one per attempt.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const waiting = waitingLines();
      expect(waiting.length).toBeLessThanOrEqual(3);
      expect(Number(waiting.at(-1)?.attempts)).toBeGreaterThan(waiting.length);
      expect(waiting[0]?.msg).toMatch(
        /^waiting for the message broker at amqp:\/\/guest:\*\*\*@127\.0\.0\.1:\d+\/.* — connection refused; retrying$/,
      );
      expect(lines().filter((l) => l.level === "fatal" || l.level === "error")).toEqual([]);
      expect(child.exitCode).toBeNull();

      await gate.open();
      await waitFor(() => steps(output()).includes("ready"), 30_000, "the fixture service");
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200,
        10_000,
        "ready",
      );
      const connected = lines().filter((l) => String(l.msg).startsWith("connected to the message broker"));
      expect(connected.map((l) => l.msg)).toEqual([
        expect.stringMatching(/^connected to the message broker again after \d+ failed attempts?, [\d.]+ s$/),
      ]);
      expect(output()).not.toContain('"stack"');
      expect(output()).not.toContain("guest:guest@");
    } finally {
      const exited = new Promise((resolve) => child.on("exit", resolve));
      child.kill("SIGTERM");
      await exited;
      await gate.shut();
    }
  }, 90_000);

  it("with a limit on the wait (connectTimeoutMs), a service that cannot reach the broker logs why and exits 1", async () => {
    let output = "";
    const child = spawn(
      process.execPath,
      ["--import", "tsx", join(import.meta.dirname, "test", "run-service-fixture.ts")],
      {
        env: {
          ...process.env,
          AMQP_URL: "amqp://guest:guest@127.0.0.1:1/none",
          CONNECT_TIMEOUT_MS: "2000",
          FIXTURE_LOG_LEVEL: "info",
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    child.stdout?.on("data", (chunk) => (output += chunk));
    const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
    expect(code).toBe(1);
    expect(steps(output)).toEqual([]);
    expect(output).toMatch(/"level":"fatal".*"msg":"fixture failed to start"/);
  }, 60_000);
});

/** The value of one sample (`name{labels}`) in Prometheus text, or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("metrics on /metrics", () => {
  it("RPC histograms on both sides by route and outcome, queue gauges, database and Redis errors", async () => {
    const port = await freePort();
    // Redis on port 1: nothing listens there, the client's connection attempts fail for real.
    const { child, output } = startFixture({ HEALTH_PORT: String(port), REDIS_URL: "redis://127.0.0.1:1" });
    const scrape = async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    try {
      await waitFor(() => steps(output()).includes("ready"), 30_000, "the fixture service");
      const before = await scrape();
      // Earlier tests of this file called through the same client: its counts go on from theirs.
      const callerBefore = await clientMetrics.scrape();
      expect(sample(before, 'db_errors_total{kind="connection"}')).toBe(0);

      await client.call(SlowRpc, { ms: 1 }, { timeoutMs: 10_000 });
      await client.call(SlowRpc, { ms: 1 }, { timeoutMs: 10_000 });
      await expect(client.call(UnreachableDatabaseRpc, {}, { timeoutMs: 15_000 })).rejects.toMatchObject({
        kind: "unavailable",
      });
      // A driver error the handler lets through is translated and counted once.
      await expect(client.call(ExhaustedDatabaseRpc, {}, { timeoutMs: 10_000 })).rejects.toMatchObject({
        code: "DB_UNAVAILABLE",
      });
      await expect(client.call(SlowRpc, { ms: 2_000 }, { timeoutMs: 50 })).rejects.toMatchObject({
        kind: "timeout",
      });

      const server = await scrape();
      // The server side counts what its handlers answered; the timed-out call's handler is still running.
      expect(
        sample(server, 'rpc_server_duration_seconds_count{route="users.fixture.slow",outcome="ok"}'),
      ).toBe(2);
      expect(
        sample(
          server,
          'rpc_server_duration_seconds_count{route="users.fixture.unreachable-database",outcome="unavailable"}',
        ),
      ).toBe(1);
      expect(server).toMatch(
        /^rpc_server_duration_seconds_bucket\{le="0\.1",route="users\.fixture\.slow",outcome="ok"\} 2$/m,
      );
      expect(
        sample(
          server,
          'rpc_server_duration_seconds_count{route="users.fixture.exhausted-database",outcome="unavailable"}',
        ),
      ).toBe(1);
      // The statement to the database that is not there, and the exhausted one: each counted once.
      expect(sample(server, 'db_errors_total{kind="connection"}')).toBe(2);
      expect(sample(server, 'bus_queue_consumers{queue="users.rpc"}')).toBe(1);
      expect(sample(server, 'bus_queue_messages{queue="users.rpc"}')).toBeGreaterThanOrEqual(0);
      expect(sample(server, 'metrics_source_up{source="queues"}')).toBe(1);
      expect(sample(server, "bus_connected")).toBe(1);
      await waitFor(
        async () => (sample(await scrape(), "redis_errors_total") ?? 0) > 0,
        10_000,
        "a counted Redis error",
      );

      const callerAfter = await clientMetrics.scrape();
      const called = (route: string, outcome: string) => {
        const series = `rpc_client_duration_seconds_count{route="${route}",outcome="${outcome}"}`;
        return (sample(callerAfter, series) ?? 0) - (sample(callerBefore, series) ?? 0);
      };
      expect(called("users.fixture.slow", "ok")).toBe(2);
      expect(called("users.fixture.slow", "timeout")).toBe(1);
      expect(called("users.fixture.unreachable-database", "unavailable")).toBe(1);
    } finally {
      const exited = new Promise((resolve) => child.on("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
  }, 60_000);
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
