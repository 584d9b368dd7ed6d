import { waitFor } from "@fundraise/bus/testing";
import { outboxDdl } from "@fundraise/outbox";
import { ChainEvents, defineEvent, UsersRpc } from "@fundraise/protocol";
import { createProcessMetrics, outboxBacklogSql, processMetrics } from "@fundraise/service-kit";
import { describe, expect, it } from "vitest";
import { useHarness } from "./test/harness.ts";

// The users service's /metrics as runService assembles it, against the service running in its harness
// (its bus reports to this process's registry, as a service's bus does to its own).
const h = useHarness("metrics");

function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** The service's scrape: its bus's queues and its outbox, as runService wires them. */
function serviceScrape() {
  const bus = h.buses.find((b) => b.service === "users");
  const backlog = h.app.outbox?.backlog;
  if (!bus || !backlog) throw new Error("the users service runs with a bus and an outbox");
  processMetrics().setSources({ queues: (ms) => bus.inspectQueues(ms), outbox: backlog });
  return processMetrics().scrape();
}

describe("the users service's metrics", () => {
  it("an RPC call is timed on the client and the server side, by route and outcome", async () => {
    const series = (side: string) =>
      `rpc_${side}_duration_seconds_count{route="users.user.count",outcome="ok"}`;
    const before = await processMetrics().scrape();
    await h.client.call(UsersRpc.count, {});
    const after = await processMetrics().scrape();
    for (const side of ["client", "server"]) {
      expect((sample(after, series(side)) ?? 0) - (sample(before, series(side)) ?? 0)).toBe(1);
    }
    expect(after).toMatch(
      /^rpc_server_duration_seconds_bucket\{le="\+Inf",route="users\.user\.count",outcome="ok"\} \d+$/m,
    );
  });

  it("queue depth and consumers of its RPC queue and subscriptions, and what their dead-letter queues hold", async () => {
    const queue = `users.${ChainEvents.userStatusChanged.name}`;
    const text = await serviceScrape();
    expect(sample(text, 'bus_queue_consumers{queue="users.rpc"}')).toBe(1);
    expect(sample(text, `bus_queue_consumers{queue="${queue}"}`)).toBe(1);
    expect(sample(text, `bus_queue_messages{queue="${queue}"}`)).toBe(0);
    expect(sample(text, `bus_dead_letter_messages{queue="${queue}.dlq"}`)).toBe(0);

    // A fact that does not match its schema is dead-lettered at once: the gauge shows it.
    // (Published under a schema of its own that takes anything: the bus checks what it publishes.)
    const malformed = defineEvent(ChainEvents.userStatusChanged.name, UsersRpc.count.request);
    await h.client.publish(malformed, {});
    await waitFor(
      async () => sample(await serviceScrape(), `bus_dead_letter_messages{queue="${queue}.dlq"}`) === 1,
      10_000,
      "the dead letter counted",
    );
  });

  it("the outbox backlog and the age of its oldest event, read from its table at scrape time", async () => {
    const text = await serviceScrape();
    expect(text).toContain('metrics_source_up{source="outbox"} 1');
    expect(sample(text, 'outbox_backlog_events{schema="users"}')).toBeGreaterThanOrEqual(0);

    // A schema whose outbox no relay drains: two events wait, the older for an hour.
    await h.sql.query(`CREATE SCHEMA metrics_probe; ${outboxDdl("metrics_probe")}`);
    await h.sql.query(
      `INSERT INTO metrics_probe.outbox (id, event_name, payload, content_type, created_at, published_at) VALUES
       (gen_random_uuid(), 'x.y.happened', '\\x00', 'application/json', now() - interval '1 hour', NULL),
       (gen_random_uuid(), 'x.y.happened', '\\x00', 'application/json', now() - interval '1 minute', NULL),
       (gen_random_uuid(), 'x.y.happened', '\\x00', 'application/json', now() - interval '2 hours', now())`,
    );
    const probe = createProcessMetrics();
    probe.setSources({
      outbox: async () => {
        const { rows } = await h.sql.query<{ events: number; age: number }>(
          outboxBacklogSql("metrics_probe"),
        );
        return { schema: "metrics_probe", events: rows[0]?.events ?? 0, oldestAgeSeconds: rows[0]?.age ?? 0 };
      },
    });
    const probed = await probe.scrape();
    expect(sample(probed, 'outbox_backlog_events{schema="metrics_probe"}')).toBe(2);
    const age = sample(probed, 'outbox_oldest_age_seconds{schema="metrics_probe"}') ?? 0;
    expect(age).toBeGreaterThanOrEqual(3_600);
    expect(age).toBeLessThan(3_700);
  });
});
