import { describe, expect, it } from "vitest";
import { createProcessMetrics, outboxBacklogSql } from "./metrics.ts";
import { createSqlPool } from "./sql-pool.ts";

describe("a scrape", () => {
  it("does not wait for a source that hangs (a broker or database gone quiet): it says so and goes on", async () => {
    const metrics = createProcessMetrics({ sourceTimeoutMs: 50 });
    metrics.setSources({
      service: "probe",
      connected: () => false,
      queues: () => new Promise(() => undefined),
      outbox: async () => ({ schema: "probe", events: 3, oldestAgeSeconds: 12.5 }),
      text: () => "# TYPE probe_own gauge\nprobe_own 7",
    });
    const started = Date.now();
    const text = await metrics.scrape();
    // A source that never answers, timed out after 50 ms: any finite time is the point, not its speed.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(text).toContain('metrics_source_up{source="queues"} 0');
    expect(text).toContain('metrics_source_up{source="outbox"} 1');
    expect(text).not.toMatch(/^bus_queue_messages\{/m);
    expect(text).toContain('outbox_backlog_events{schema="probe"} 3');
    expect(text).toContain('outbox_oldest_age_seconds{schema="probe"} 12.5');
    expect(text).toMatch(/^bus_connected 0$/m);
    expect(text).toContain('service_info{service="probe"} 1');
    expect(text).toMatch(/^probe_own 7$/m);
  });

  it("reports a failing source as down, and no stale values of it", async () => {
    const metrics = createProcessMetrics({ sourceTimeoutMs: 1_000 });
    let fail = false;
    metrics.setSources({
      outbox: async () => {
        if (fail) throw new Error("database unavailable");
        return { schema: "probe", events: 1, oldestAgeSeconds: 1 };
      },
    });
    expect(await metrics.scrape()).toContain('outbox_backlog_events{schema="probe"} 1');
    fail = true;
    const text = await metrics.scrape();
    expect(text).toContain('metrics_source_up{source="outbox"} 0');
    expect(text).not.toMatch(/^outbox_backlog_events\{/m);
  });

  it("scrapes at the same time share one reading of the sources", async () => {
    const metrics = createProcessMetrics({ sourceTimeoutMs: 1_000 });
    let reads = 0;
    metrics.setSources({
      outbox: async () => {
        reads += 1;
        await new Promise((resolve) => setTimeout(resolve, 20));
        return { schema: "probe", events: reads, oldestAgeSeconds: 0 };
      },
    });
    const [a, b] = await Promise.all([metrics.scrape(), metrics.scrape()]);
    expect(reads).toBe(1);
    expect(a).toBe(b);
    await metrics.scrape();
    expect(reads).toBe(2);
  });

  it("a database that is not there: the outbox source is down, the scrape answers", async () => {
    // Port 1: nothing listens there; the connection is refused for real.
    const pool = createSqlPool("postgres://postgres@127.0.0.1:1/none", { max: 1 });
    const metrics = createProcessMetrics({ sourceTimeoutMs: 2_000 });
    metrics.setSources({
      outbox: async () => {
        await pool.query(outboxBacklogSql("users"));
        return { schema: "users", events: 0, oldestAgeSeconds: 0 };
      },
    });
    try {
      const text = await metrics.scrape();
      expect(text).toContain('metrics_source_up{source="outbox"} 0');
      expect(text).not.toMatch(/^outbox_backlog_events\{/m);
    } finally {
      await pool.end();
    }
  });

  it("the backlog statement takes plain schema names only", () => {
    expect(outboxBacklogSql("users")).toContain("FROM users.outbox WHERE published_at IS NULL");
    expect(() => outboxBacklogSql("users; drop table x")).toThrow(/Invalid schema/);
  });
});
