import { expect, it } from "vitest";
import { formatReport, runChaos, sum } from "../scripts/lib/chaos.ts";

// The short run of `pnpm chaos`: every service twice, two gateways, the indexer's standby, on a RabbitMQ
// node, a Redis server and a database of this run's own (nothing another test file uses is restarted),
// under a mixed load over both gateways while one fault of each kind is injected. The same targets as
// the long run: nothing acknowledged lost, nothing doubled, every answer in the envelope, and the first
// success on each fault's path within 10 s.
it("a short chaos run: 0 lost, 0 duplicated, 0 non-envelope, every recovery ≤ 10 s", async () => {
  const report = await runChaos({ durationS: 60, faults: 8, workers: 4 });
  const summary = formatReport(report);
  expect(report.faults.map((f) => f.kind).sort(), summary).toEqual(
    ["chain", "indexer-writer", "ipfs", "kill", "kill", "postgres", "rabbitmq", "redis"].sort(),
  );
  expect(report.acknowledged.adds, summary).toBeGreaterThan(0);
  expect(report.acknowledged.ratings + report.acknowledged.invitations, summary).toBeGreaterThan(0);
  expect(report.acknowledged.roleChanges, summary).toBeGreaterThan(0);
  expect(
    {
      lost: sum(report.lost),
      duplicated: sum(report.duplicated),
      nonEnvelope: report.nonEnvelope,
      unexpected5xx: report.unexpected5xx,
      withoutOwner: report.projectsWithoutOwner,
      ratingMeansOff: report.ratingMeansOff,
      indexMissing: report.index.missing,
      indexExtra: report.index.extra,
      whitelistOff: report.index.whitelistOff,
      crashes: report.crashes,
    },
    summary,
  ).toEqual({
    lost: 0,
    duplicated: 0,
    nonEnvelope: 0,
    unexpected5xx: 0,
    withoutOwner: 0,
    ratingMeansOff: 0,
    indexMissing: 0,
    indexExtra: 0,
    whitelistOff: 0,
    crashes: [],
  });
  for (const fault of report.faults) {
    expect(fault.recoveryMs, summary).not.toBeNull();
    expect(fault.recoveryMs as number, summary).toBeLessThanOrEqual(10_000);
    if (fault.takeoverMs !== undefined)
      expect(fault.takeoverMs ?? Number.NaN, summary).toBeLessThanOrEqual(10_000);
  }
}, 300_000);
