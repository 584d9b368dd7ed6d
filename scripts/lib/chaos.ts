/**
 * The system with replicas under scheduled faults (`pnpm chaos`, `e2e/chaos.test.ts`).
 *
 * Starts every service twice (the indexer as writer and hot standby), two gateways, on a RabbitMQ node, a
 * Redis server and a database of the run's own, anvil behind a proxy the run can cut and the IPFS
 * stand-in; drives a mixed load over both gateways (sign-ins, lists, Adds with small files, ratings,
 * invitations and their replies, chain role changes) while it injects faults one after another; then reads
 * everything back and counts what went wrong against what was acknowledged. Writes carry an
 * Idempotency-Key and are retried with it after a 503, a 504, a 409 "in use" or a cut connection; a write
 * counts as acknowledged only on its 2xx.
 *
 * The parts are under chaos/: the system (replicas.ts), the client side (client.ts), the load (load.ts,
 * chain-load.ts), the faults (faults.ts, probes.ts), the checks (checks.ts) and the report (report.ts,
 * format.ts).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ChainRoleChanges } from "./chaos/chain-load.ts";
import { checkAfterRun } from "./chaos/checks.ts";
import { ChaosClient, signUp } from "./chaos/client.ts";
import { injectFaults } from "./chaos/faults.ts";
import { MixedLoad, nothingAcknowledged } from "./chaos/load.ts";
import { Probes } from "./chaos/probes.ts";
import { type Cleanups, startChaosSystem, superviseInstances } from "./chaos/replicas.ts";
import { type ChaosReport, emptyReport } from "./chaos/report.ts";

export { FAULT_CYCLE } from "./chaos/faults.ts";
export { formatReport, sum, targetsMet } from "./chaos/format.ts";
export type { ChaosReport, FaultKind, FaultRecord } from "./chaos/report.ts";

export interface ChaosOptions {
  /** Seconds of load (faults included). */
  durationS: number;
  /** Faults to inject, spread over the duration. */
  faults: number;
  /** Concurrent simulated users. */
  workers?: number;
  /** Seconds an outage lasts (IPFS stopped, chain RPC cut). */
  outageS?: number;
  log?: (line: string) => void;
  /** Where to write what the services printed (warnings and errors), for a run that missed a target. */
  outputFile?: string;
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log ?? (() => {});
  const workersWanted = options.workers ?? 6;
  const outageMs = (options.outageS ?? 3) * 1000;
  const dir = mkdtempSync(join(tmpdir(), "fundraise-chaos-"));
  const cleanups: Cleanups = [];
  const report = emptyReport();
  try {
    const system = await startChaosSystem({ dir, cleanups, outputFile: options.outputFile, log });
    report.rabbitStartMs = system.rabbit.startMs;

    const client = new ChaosClient(system.gateways, report);
    const { mailbox } = system.sys;
    const workers = await Promise.all(
      Array.from({ length: workersWanted }, (_, i) => signUp(client, mailbox, i)),
    );
    const prober = await signUp(client, mailbox, workersWanted);
    log(`${workers.length} users signed up; load and faults for ${options.durationS} s`);

    const acknowledged = nothingAcknowledged();
    const load = new MixedLoad(client, acknowledged, workers);
    const chain = new ChainRoleChanges(system.registry, acknowledged.chainStatus, report);
    const probes = new Probes(client, load, chain, prober);

    const began = Date.now();
    cleanups.unshift(superviseInstances(system, report, began));
    const stopAt = began + options.durationS * 1000;
    const running = [...workers.map((w) => load.run(w, stopAt)), chain.run(workers, stopAt)];
    await injectFaults(
      { system, probes, report, outageMs },
      { began, durationS: options.durationS, count: options.faults },
      log,
    );
    await Promise.all(running);
    await chain.settled();
    report.seconds = Math.round((Date.now() - began) / 1000);
    log(`load stopped after ${report.seconds} s; checking`);

    await checkAfterRun({ system, client, acknowledged, prober, report });
    return report;
  } finally {
    for (const cleanup of cleanups) await cleanup().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}
