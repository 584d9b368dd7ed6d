/**
 * The faults a chaos run injects, one after another on a schedule, each with the time to the first
 * success on its path afterwards.
 */
import { firstSuccess, type Probes } from "./probes.ts";
import { type ChaosSystem, type Instance, restartInstance } from "./replicas.ts";
import type { ChaosReport, FaultKind, FaultRecord } from "./report.ts";
import { pick, sleep } from "./util.ts";

/** The order faults come in; a run cycles through it. */
export const FAULT_CYCLE: FaultKind[] = [
  "kill",
  "rabbitmq",
  "redis",
  "kill",
  "postgres",
  "ipfs",
  "chain",
  "indexer-writer",
];

export interface FaultContext {
  system: ChaosSystem;
  probes: Probes;
  report: ChaosReport;
  /** Milliseconds an outage lasts (IPFS stopped, chain RPC cut). */
  outageMs: number;
}

/** What became of a fault: its target and the recovery measured from `at`. */
type Outcome = Pick<FaultRecord, "target" | "recoveryMs" | "takeoverMs">;

/**
 * `count` faults spread evenly over the `durationS` seconds from `began`, in FAULT_CYCLE's order; each
 * recorded in the report and logged.
 */
export async function injectFaults(
  ctx: FaultContext,
  schedule: { began: number; durationS: number; count: number },
  log: (line: string) => void,
): Promise<void> {
  const interval = (schedule.durationS * 1000) / (schedule.count + 1);
  for (let i = 0; i < schedule.count; i++) {
    const slot = schedule.began + interval * (i + 1);
    if (Date.now() < slot) await sleep(slot - Date.now());
    const kind = FAULT_CYCLE[i % FAULT_CYCLE.length] as FaultKind;
    // A fault that could not be injected is a miss, not the end of the run.
    const fault = await inject(kind, ctx).catch(
      (err: Error): FaultRecord => ({
        kind,
        target: `not injected: ${err.message}`.slice(0, 60),
        at: Date.now(),
        recoveryMs: null,
      }),
    );
    ctx.report.faults.push(fault);
    log(
      `fault ${i + 1}/${schedule.count} ${fault.kind} ${fault.target}: recovery ${fault.recoveryMs ?? "none"} ms${
        fault.takeoverMs !== undefined ? `, standby took over in ${fault.takeoverMs ?? "-"} ms` : ""
      }`,
    );
  }
}

async function inject(kind: FaultKind, ctx: FaultContext): Promise<FaultRecord> {
  const at = Date.now();
  const { target, recoveryMs, ...extra } = await injectors[kind](ctx, at);
  return { kind, target, at, recoveryMs, ...extra };
}

const injectors: Record<FaultKind, (ctx: FaultContext, at: number) => Promise<Outcome>> = {
  kill: killInstance,
  "indexer-writer": killIndexerWriter,
  rabbitmq: async ({ system, probes }) => {
    await system.rabbit.restart();
    return { target: "own RabbitMQ node", recoveryMs: await firstSuccess(probes.add, Date.now()) };
  },
  redis: async ({ system, probes }) => {
    await system.redis.restart();
    return { target: "own Redis", recoveryMs: await firstSuccess(probes.signIn, Date.now()) };
  },
  postgres: cutDatabaseConnections,
  ipfs: async ({ system, probes, outageMs }) => {
    await system.sys.ipfsNode?.stop();
    await sleep(outageMs);
    await system.sys.ipfsNode?.start();
    return { target: "IPFS stand-in", recoveryMs: await firstSuccess(probes.add, Date.now()) };
  },
  chain: async ({ system, probes, outageMs }) => {
    await system.chainProxy?.cut();
    await sleep(outageMs);
    await system.chainProxy?.restore();
    return { target: "chain RPC proxy", recoveryMs: await firstSuccess(probes.indexed(), Date.now()) };
  },
};

/** SIGKILL to a running instance at random; the supervisor's restart follows at once. */
async function killInstance({ system, probes, report }: FaultContext, at: number): Promise<Outcome> {
  const { instances } = system;
  const victim = pick(instances.filter((i) => i.pid > 0)) as Instance;
  const index = instances.filter((i) => i.service === victim.service).indexOf(victim);
  const name = `${victim.service}#${index + 1}`;
  process.kill(victim.pid, "SIGKILL");
  victim.pid = 0;
  const restarted = restartInstance(system.sys, victim, report);
  const probe =
    victim.service === "gateway"
      ? probes.gateway(system.gateways[index] as string)
      : probes.service(victim.service);
  const recovery = await firstSuccess(probe, at);
  await restarted;
  return { target: name, recoveryMs: recovery };
}

/** SIGKILL to the indexer that holds the writer's lock: the standby takes it over. */
async function killIndexerWriter({ system, probes, report }: FaultContext, at: number): Promise<Outcome> {
  const writer = await indexerWriter(system.instances);
  if (!writer) return { target: "no writer found", recoveryMs: null };
  const killed = writer.pid;
  process.kill(writer.pid, "SIGKILL");
  writer.pid = 0;
  const restarted = restartInstance(system.sys, writer, report);
  const takeover = firstSuccess(async () => {
    const now = await indexerWriter(system.instances);
    return now !== undefined && now !== writer;
  }, at);
  const recovery = await firstSuccess(probes.indexed(), at);
  const takeoverMs = await takeover;
  await restarted;
  return { target: `chain-indexer writer (pid ${killed})`, recoveryMs: recovery, takeoverMs };
}

/** The chain indexer instance whose metrics say it is the writer. */
async function indexerWriter(instances: Instance[]): Promise<Instance | undefined> {
  for (const instance of instances.filter((i) => i.service === "chain-indexer")) {
    const text = await fetch(`http://127.0.0.1:${instance.env.HEALTH_PORT}/metrics`, {
      signal: AbortSignal.timeout(2_000),
    }).then(
      (r) => r.text(),
      () => "",
    );
    if (/^chain_indexer_writer(\{[^}]*\})? 1$/m.test(text)) return instance;
  }
  return undefined;
}

/** Every connection to the run's database terminated at once. */
async function cutDatabaseConnections({ system, probes }: FaultContext): Promise<Outcome> {
  const { sql, dbName } = system;
  // The server is shared: when it has no connection to spare for a moment, try again.
  let cut: { rowCount: number | null } | undefined;
  for (let attempt = 0; cut === undefined; attempt++) {
    cut = await sql
      .query(
        "select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()",
        [dbName],
      )
      .catch((err: Error) => {
        if (attempt >= 50) throw err;
        return undefined;
      });
    if (cut === undefined) await sleep(200);
  }
  const back = Date.now();
  return {
    target: `${cut.rowCount} backends of ${dbName}`,
    recoveryMs: await firstSuccess(probes.add, back),
  };
}
