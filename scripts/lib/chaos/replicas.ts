/**
 * The system a chaos run drives: every service twice (the indexer as writer and hot standby), two
 * gateways, on a RabbitMQ node, a Redis server and a database of the run's own, anvil behind a proxy the
 * run can cut; and the supervisor's part, starting a crashed instance again.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createProvider, type RegistryContract, registryAt } from "@fundraise/contracts";
import { type JsonRpcProvider, Wallet } from "ethers";
import pg from "pg";
import { type System, startSystem } from "../../../e2e/system.ts";
import {
  alive,
  type CuttableProxy,
  type OwnServer,
  startOwnRabbit,
  startOwnRedis,
  startProxy,
} from "../private-infra.ts";
import { freePort } from "../processes.ts";
import { type ChaosReport, noteExample } from "./report.ts";

/** What the run undoes at its end, first to last. */
export type Cleanups = (() => Promise<unknown>)[];

/** One instance of a service; `pid` 0 while it is down. */
export interface Instance {
  service: string;
  pid: number;
  env: Record<string, string>;
}

export interface ChaosSystem {
  sys: System;
  rabbit: OwnServer;
  redis: OwnServer;
  /** In front of anvil: the services' chain URL. */
  chainProxy: CuttableProxy | undefined;
  gateways: string[];
  instances: Instance[];
  /** A few connections to the run's database, for the checks and the Postgres cut. */
  sql: pg.Pool;
  dbName: string;
  provider: JsonRpcProvider;
  registry: RegistryContract;
}

export async function startChaosSystem(options: {
  /** Where the RabbitMQ node keeps its data. */
  dir: string;
  cleanups: Cleanups;
  outputFile?: string;
  log: (line: string) => void;
}): Promise<ChaosSystem> {
  const { dir, cleanups, log } = options;
  // The run's own broker and cache; the shared Postgres server with a database of the run's own.
  const [rabbit, redis] = await Promise.all([startOwnRabbit(join(dir, "rabbitmq")), startOwnRedis()]);
  cleanups.push(rabbit.stop, redis.stop);
  log(`own RabbitMQ node up in ${rabbit.startMs} ms (${rabbit.url}), own Redis ${redis.url}`);
  let chainProxy: CuttableProxy | undefined;
  const [indexerPort0, indexerPort1, gatewayPort1] = [await freePort(), await freePort(), await freePort()];
  const sys: System = await startSystem({
    amqpUrl: rabbit.url,
    chainUrl: async (anvilUrl) => {
      chainProxy = await startProxy({ host: "127.0.0.1", port: Number(new URL(anvilUrl).port) });
      return `http://127.0.0.1:${chainProxy.port}`;
    },
    // The run is not about limits: each simulated user has an address of its own, and the per-address,
    // per-user and review-queue limits stay far above the load (else its Adds end at 5 per user).
    env: {
      TRUST_PROXY: "true",
      REDIS_URL: redis.url,
      RATE_LIMIT_PER_MINUTE: "1000000",
      AUTH_RATE_LIMIT_PER_MINUTE: "1000000",
      NONCE_PER_IP_PER_MINUTE: "1000000",
      NONCE_PER_IP_ADDRESS_PER_MINUTE: "1000000",
      REVIEW_QUEUE_MAX: "100000",
      REVIEW_QUEUE_PER_PROPOSER: "100000",
    },
    serviceEnv: { "chain-indexer": { HEALTH_PORT: String(indexerPort0) } },
  });
  cleanups.unshift(() => sys.stop());
  if (options.outputFile) {
    const file = options.outputFile;
    cleanups.unshift(async () => writeFileSync(file, sys.output()));
  }
  cleanups.push(async () => chainProxy?.stop());
  const gateways = [sys.gatewayUrl, `http://localhost:${gatewayPort1}`];

  // The second instance of every service: the same queues, a gateway on the next port, the indexer's
  // hot standby.
  const instances: Instance[] = [];
  for (const [service, pid] of Object.entries(sys.pids)) {
    const env: Record<string, string> =
      service === "chain-indexer" ? { HEALTH_PORT: String(indexerPort0) } : {};
    instances.push({ service, pid, env });
  }
  const seconds = await Promise.all(
    Object.keys(sys.pids).map(async (service) => {
      const env: Record<string, string> =
        service === "chain-indexer"
          ? { HEALTH_PORT: String(indexerPort1) }
          : service === "gateway"
            ? { PORT: String(gatewayPort1) }
            : {};
      return { service, env, pid: await sys.startService(service, env) };
    }),
  );
  instances.push(...seconds);
  log(`instances: ${instances.map((i) => `${i.service}(${i.pid})`).join(" ")}`);
  const sql = new pg.Pool({ connectionString: sys.databaseUrl, max: 3 });
  sql.on("error", () => {});
  cleanups.unshift(() => sql.end());
  const dbName = new URL(sys.databaseUrl).pathname.slice(1);
  const provider: JsonRpcProvider = createProvider(sys.anvil.url, sys.anvil.chainId);
  cleanups.unshift(async () => provider.destroy());
  const chainAdmin = new Wallet(sys.anvil.accounts[0] as string, provider);
  const registry = registryAt(sys.deployment.registry, chainAdmin);
  return { sys, rabbit, redis, chainProxy, gateways, instances, sql, dbName, provider, registry };
}

/** Starts the instance again with its own environment; a failure to start is an example in the report. */
export async function restartInstance(sys: System, instance: Instance, report: ChaosReport): Promise<void> {
  const pid = await sys.startService(instance.service, instance.env).catch((err: Error) => {
    noteExample(report, `${instance.service} did not start again: ${err.message.slice(0, 200)}`);
    return 0;
  });
  instance.pid = pid;
}

/**
 * A supervisor (`pnpm start`, Kubernetes) starts a crashed instance again: so does the run, and counts
 * it. Answers the cleanup that stops watching.
 */
export function superviseInstances(
  system: ChaosSystem,
  report: ChaosReport,
  began: number,
): () => Promise<void> {
  const watcher = setInterval(() => {
    for (const instance of system.instances) {
      if (instance.pid > 0 && !alive(instance.pid)) {
        report.crashes.push(
          `${instance.service} (pid ${instance.pid}) at ${Math.round((Date.now() - began) / 1000)} s`,
        );
        instance.pid = 0;
        void restartInstance(system.sys, instance, report);
      }
    }
  }, 500);
  return async () => clearInterval(watcher);
}
