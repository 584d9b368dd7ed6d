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
 */
import { randomBytes, randomInt } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { confirm, createProvider, eventByTopic, registryAt, UserStatus } from "@fundraise/contracts";
import { cidOfDigestHex } from "@fundraise/ipfs-node";
import { type JsonRpcProvider, Wallet } from "ethers";
import pg from "pg";
import { type System, startSystem } from "../../e2e/system.ts";
import { alive, type CuttableProxy, startOwnRabbit, startOwnRedis, startProxy } from "./private-infra.ts";
import { freePort } from "./processes.ts";

export type FaultKind = "kill" | "rabbitmq" | "redis" | "postgres" | "ipfs" | "chain" | "indexer-writer";

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

export interface FaultRecord {
  kind: FaultKind;
  target: string;
  at: number;
  /** Milliseconds from the fault's end (the component back, or the kill) to the first success on its path. */
  recoveryMs: number | null;
  /** The indexer's standby: milliseconds from the writer's kill to its taking the lock. */
  takeoverMs?: number | null;
}

export interface ChaosReport {
  seconds: number;
  faults: FaultRecord[];
  requests: number;
  statuses: Record<string, number>;
  /** Requests that never got an answer (the connection refused or cut: a killed replica). */
  connectionErrors: number;
  acknowledged: { adds: number; ratings: number; invitations: number; accepts: number; roleChanges: number };
  lost: { adds: number; pins: number; ratings: number; invitations: number; accepts: number };
  duplicated: {
    projects: number;
    memberships: number;
    ratings: number;
    owners: number;
    users: number;
    facts: number;
    indexedLogs: number;
    sameKeyOtherProject: number;
  };
  nonEnvelope: number;
  unexpected5xx: number;
  examples: string[];
  projectsWithoutOwner: number;
  ratingMeansOff: number;
  index: { chainLogs: number; indexedLogs: number; missing: number; extra: number; whitelistOff: number };
  rabbitStartMs: number;
  /** Instances that exited without being killed (a supervisor's restart follows, as `pnpm start`'s). */
  crashes: string[];
}

const RETRYABLE = new Set([503, 504]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number;
  body: { data: unknown; success: boolean; message: string | null } | undefined;
  code?: string;
}

interface Worker {
  ip: string;
  wallet: Wallet;
  userId: number;
  username: string;
  token: string;
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log ?? (() => {});
  const workersWanted = options.workers ?? 6;
  const outageMs = (options.outageS ?? 3) * 1000;
  const dir = mkdtempSync(join(tmpdir(), "fundraise-chaos-"));
  const cleanups: (() => Promise<unknown>)[] = [];
  const report: ChaosReport = {
    seconds: 0,
    faults: [],
    requests: 0,
    statuses: {},
    connectionErrors: 0,
    acknowledged: { adds: 0, ratings: 0, invitations: 0, accepts: 0, roleChanges: 0 },
    lost: { adds: 0, pins: 0, ratings: 0, invitations: 0, accepts: 0 },
    duplicated: {
      projects: 0,
      memberships: 0,
      ratings: 0,
      owners: 0,
      users: 0,
      facts: 0,
      indexedLogs: 0,
      sameKeyOtherProject: 0,
    },
    nonEnvelope: 0,
    unexpected5xx: 0,
    examples: [],
    projectsWithoutOwner: 0,
    ratingMeansOff: 0,
    index: { chainLogs: 0, indexedLogs: 0, missing: 0, extra: 0, whitelistOff: 0 },
    rabbitStartMs: 0,
    crashes: [],
  };
  const example = (line: string) => {
    if (report.examples.length < 20) report.examples.push(line);
  };
  try {
    // The run's own broker and cache; the shared Postgres server with a database of the run's own.
    const [rabbit, redis] = await Promise.all([startOwnRabbit(join(dir, "rabbitmq")), startOwnRedis()]);
    cleanups.push(rabbit.stop, redis.stop);
    report.rabbitStartMs = rabbit.startMs;
    log(`own RabbitMQ node up in ${rabbit.startMs} ms (${rabbit.url}), own Redis ${redis.url}`);
    let proxy: CuttableProxy | undefined;
    const [indexerPort0, indexerPort1, gatewayPort1] = [await freePort(), await freePort(), await freePort()];
    const sys: System = await startSystem({
      amqpUrl: rabbit.url,
      chainUrl: async (anvilUrl) => {
        proxy = await startProxy({ host: "127.0.0.1", port: Number(new URL(anvilUrl).port) });
        return `http://127.0.0.1:${proxy.port}`;
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
    cleanups.push(async () => proxy?.stop());
    const gateways = [sys.gatewayUrl, `http://localhost:${gatewayPort1}`];

    // The second instance of every service: the same queues, a gateway on the next port, the indexer's
    // hot standby.
    interface Instance {
      service: string;
      pid: number;
      env: Record<string, string>;
    }
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

    // --- the client side -------------------------------------------------------------------------------
    async function call(
      method: string,
      path: string,
      opts: { token?: string; body?: unknown; key?: string; gateway?: string; ip?: string } = {},
    ): Promise<Answer> {
      const headers: Record<string, string> = { "x-forwarded-for": opts.ip ?? "198.18.0.1" };
      if (opts.token) headers.authorization = `Bearer ${opts.token}`;
      if (opts.body !== undefined) headers["content-type"] = "application/json";
      if (opts.key) headers["idempotency-key"] = opts.key;
      const base = opts.gateway ?? (gateways[randomInt(gateways.length)] as string);
      report.requests += 1;
      let res: Response;
      let text: string;
      try {
        res = await fetch(`${base}${path}`, {
          method,
          headers,
          body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
          signal: AbortSignal.timeout(20_000),
        });
        text = await res.text();
      } catch {
        report.connectionErrors += 1;
        return { status: 0, body: undefined };
      }
      report.statuses[res.status] = (report.statuses[res.status] ?? 0) + 1;
      let body: Answer["body"];
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      const keys = body && typeof body === "object" ? Object.keys(body).sort().join(",") : "";
      const enveloped =
        keys === "data,message,success" &&
        body?.success === res.status < 300 &&
        (res.status < 300 || (body?.data === null && typeof body?.message === "string"));
      if (!enveloped) {
        report.nonEnvelope += 1;
        example(`non-envelope ${method} ${path} ${res.status} ${text.slice(0, 200)}`);
      }
      if (res.status >= 500 && !RETRYABLE.has(res.status)) {
        report.unexpected5xx += 1;
        example(`${res.status} ${method} ${path} ${text.slice(0, 200)}`);
      }
      const code = (body as { code?: string } | undefined)?.code;
      return { status: res.status, body, ...(code ? { code } : {}) };
    }

    async function signIn(w: Pick<Worker, "wallet" | "ip">, gateway?: string): Promise<string | null> {
      const nonce = await call("GET", `/Authentication/GetNonce/${w.wallet.address}`, { ip: w.ip, gateway });
      if (nonce.status !== 200) return null;
      const login = await call("POST", "/Authentication/Login", {
        ip: w.ip,
        gateway,
        body: {
          address: w.wallet.address,
          signedMessage: await w.wallet.signMessage(`LOGIN: ${nonce.body?.data}`),
        },
      });
      return login.status === 200 ? (login.body?.data as string) : null;
    }

    /** Until `attempt` gives a value (setup, before any fault). */
    async function until<T>(what: string, attempt: () => Promise<T | null>, ms = 60_000): Promise<T> {
      const end = Date.now() + ms;
      for (;;) {
        const value = await attempt();
        if (value !== null) return value;
        if (Date.now() > end) throw new Error(`${what}: no success within ${ms} ms`);
        await sleep(200);
      }
    }

    async function signUp(n: number): Promise<Worker> {
      const wallet = Wallet.createRandom() as unknown as Wallet;
      const ip = `198.${randomInt(18, 20)}.${randomInt(0, 256)}.${randomInt(1, 255)}`;
      const username = `chaos_${randomBytes(3).toString("hex")}_${n}`;
      const mailAddress = `${username}@example.org`;
      const res = await call("POST", "/Authentication/Register", {
        ip,
        body: {
          Name: "Chaos",
          Surname: "Monkey",
          Username: username,
          MailAddress: mailAddress,
          SignedMessage: await wallet.signMessage("REGISTER"),
        },
      });
      if (res.status !== 201) throw new Error(`sign-up: ${res.status} ${JSON.stringify(res.body)}`);
      const mail = await sys.mailbox.next(mailAddress, 30_000);
      const link = /https?:\/\/\S+verify-email\?[^\s"<>]+/.exec(mail.text ?? "")?.[0] as string;
      const url = new URL(link.replaceAll("&amp;", "&"));
      const verified = await call("GET", `${url.pathname}${url.search}`, { ip });
      if (verified.status !== 200) throw new Error(`verify: ${verified.status}`);
      const token = await until("sign-in", () => signIn({ wallet, ip }));
      return { ip, wallet, userId: Number(res.body?.data), username, token };
    }

    const workers = await Promise.all(Array.from({ length: workersWanted }, (_, i) => signUp(i)));
    const prober = await signUp(workersWanted);
    log(`${workers.length} users signed up; load and faults for ${options.durationS} s`);

    // --- what was acknowledged ---------------------------------------------------------------------------
    const adds = new Map<string, { projectID: number; name: string; fileHash: string; owner: Worker }>();
    const ratings = new Map<string, { projectID: number; userId: number; value: number }>();
    const invitations = new Map<string, { projectID: number; invitee: Worker }>();
    const accepts = new Map<string, { projectID: number; invitee: Worker }>();
    /** Chain status set last by a confirmed transaction, by address. */
    const chainStatus = new Map<string, number>();

    /**
     * A write with an Idempotency-Key, retried with the same key after an answer that says nothing was
     * decided (503, 504, 409 in use, no answer) and with a fresh token after a 401.
     */
    async function write(w: Worker, method: string, path: string, body: unknown, deadline: number) {
      const key = `chaos-${randomBytes(8).toString("hex")}`;
      for (let attempt = 0; ; attempt++) {
        const res = await call(method, path, { token: w.token, body, key, ip: w.ip });
        const undecided =
          res.status === 0 || RETRYABLE.has(res.status) || res.code === "IDEMPOTENCY_KEY_IN_USE";
        if (res.status === 401) {
          const token = await signIn(w);
          if (token) w.token = token;
        } else if (!undecided) {
          return { res, key };
        }
        if (Date.now() > deadline || attempt > 40) return { res, key };
        await sleep(250 + attempt * 50);
      }
    }

    async function addProject(w: Worker, deadline: number): Promise<boolean> {
      const name = `Chaos ${randomBytes(6).toString("hex")}`;
      const file = Buffer.from(`%PDF-1.4 chaos ${name} ${randomBytes(24).toString("hex")}\n`);
      const { res, key } = await write(
        w,
        "POST",
        "/Project/Add",
        { projectName: name, fileHex: file.toString("hex") },
        deadline,
      );
      if (res.status !== 201 && res.status !== 200) return false;
      const dto = res.body?.data as { projectID: number; fileHash: string; projectName: string };
      adds.set(key, { projectID: dto.projectID, name, fileHash: dto.fileHash, owner: w });
      return true;
    }

    const pick = <T>(items: readonly T[]): T | undefined => items[randomInt(Math.max(items.length, 1))];

    async function rate(w: Worker, deadline: number) {
      const candidates = [...adds.values()].filter((p) => !ratings.has(`${p.projectID}:${w.userId}`));
      const project = pick(candidates);
      if (!project) return;
      const value = randomInt(0, 11) / 2;
      const { res } = await write(
        w,
        "PUT",
        `/Project/Rate/${project.projectID}/${value}`,
        undefined,
        deadline,
      );
      if (res.status === 200)
        ratings.set(`${project.projectID}:${w.userId}`, {
          projectID: project.projectID,
          userId: w.userId,
          value,
        });
    }

    async function invite(w: Worker, deadline: number) {
      const own = [...adds.values()].filter((p) => p.owner === w);
      const project = pick(own);
      const invitee = pick(workers.filter((o) => o !== w));
      if (!project || !invitee || invitations.has(`${project.projectID}:${invitee.userId}`)) return;
      const { res } = await write(
        w,
        "PUT",
        "/User/Invite/",
        { projectID: project.projectID, username: invitee.username, role: "Editor" },
        deadline,
      );
      if (res.status !== 201) return;
      invitations.set(`${project.projectID}:${invitee.userId}`, { projectID: project.projectID, invitee });
      if (randomInt(3) === 0) return; // some stay pending
      const reply = await write(
        invitee,
        "POST",
        "/User/InvitationReply",
        { projectID: project.projectID, Username: invitee.username, Role: "Editor", IsAccepted: true },
        deadline,
      );
      if (reply.res.status === 200)
        accepts.set(`${project.projectID}:${invitee.userId}`, { projectID: project.projectID, invitee });
    }

    async function workerLoop(w: Worker, stopAt: number) {
      while (Date.now() < stopAt) {
        const roll = randomInt(100);
        const deadline = Date.now() + 30_000;
        if (roll < 10) {
          const token = await signIn(w);
          if (token) w.token = token;
        } else if (roll < 35) {
          await call("GET", "/Project/Get/All", { ip: w.ip, token: w.token });
        } else if (roll < 45) {
          await call("GET", "/Project/GetAllPermissioned/false", { ip: w.ip, token: w.token });
        } else if (roll < 65) {
          await addProject(w, deadline);
        } else if (roll < 85) {
          await rate(w, deadline);
        } else {
          await invite(w, deadline);
        }
        await sleep(100);
      }
    }

    // Chain role changes: one sender (account 0, the registry's admin), one transaction at a time.
    const bystanders = Array.from({ length: 4 }, () => Wallet.createRandom().address);
    const addresses = [...workers.map((w) => w.wallet.address), ...bystanders];
    let chainQueue: Promise<unknown> = Promise.resolve();
    function setStatus(address: string, status: number): Promise<void> {
      const sent = chainQueue.then(async () => {
        await confirm(registry.getFunction("editUserStatus")(address, status));
        chainStatus.set(address.toLowerCase(), status);
        report.acknowledged.roleChanges += 1;
      });
      chainQueue = sent.catch(() => {});
      return sent;
    }
    async function chainLoop(stopAt: number) {
      while (Date.now() < stopAt) {
        const address = pick(addresses) as string;
        const now = chainStatus.get(address.toLowerCase()) ?? UserStatus.Default;
        const choices = [UserStatus.Default, UserStatus.Whitelisted, UserStatus.Viewer].filter(
          (s) => s !== now,
        );
        await setStatus(address, pick(choices) as number).catch((err: Error) =>
          example(`chain transaction failed: ${err.message}`),
        );
        await sleep(1_500);
      }
    }

    // --- probes: the first success on a fault's path ---------------------------------------------------
    const probeGateway = (gateway: string) => async () =>
      (await call("GET", "/user/learnusercount", { gateway, ip: prober.ip })).status === 200;
    const probeAdd = async () => addProject(prober, Date.now());
    const probeSignIn = async () => {
      const token = await signIn(prober);
      if (!token) return false;
      prober.token = token;
      return (
        (await call("GET", "/Project/GetAllPermissioned/false", { token, ip: prober.ip })).status === 200
      );
    };
    /** A chain change through the index: a fresh address whitelisted, until the gateway says so. */
    const probeIndexed = () => {
      const address = Wallet.createRandom().address;
      const sent = setStatus(address, UserStatus.Whitelisted).then(
        () => true,
        () => false,
      );
      return async () =>
        (await sent) &&
        (await call("GET", `/EventDebug/Whitelisted/${address}`, { ip: prober.ip })).body?.data === true;
    };
    const probeFor: Record<string, () => () => Promise<boolean>> = {
      users: () => async () => (await call("GET", "/user/learnusercount", { ip: prober.ip })).status === 200,
      auth: () => async () =>
        (await call("GET", `/Authentication/GetNonce/${prober.wallet.address}`, { ip: prober.ip })).status ===
        200,
      projects: () => async () => (await call("GET", "/Project/Get/All", { ip: prober.ip })).status === 200,
      storage: () => probeAdd,
      "chain-indexer": probeIndexed,
    };

    async function firstSuccess(probe: () => Promise<boolean>, from: number, limitMs = 30_000) {
      while (Date.now() - from < limitMs) {
        if (await probe().catch(() => false)) return Date.now() - from;
        await sleep(100);
      }
      return null;
    }

    async function indexerWriter(): Promise<Instance | undefined> {
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

    async function restart(instance: Instance) {
      const pid = await sys.startService(instance.service, instance.env).catch((err: Error) => {
        example(`${instance.service} did not start again: ${err.message.slice(0, 200)}`);
        return 0;
      });
      instance.pid = pid;
    }

    async function inject(kind: FaultKind): Promise<FaultRecord> {
      const at = Date.now();
      const done = (target: string, recoveryMs: number | null, extra: Partial<FaultRecord> = {}) => ({
        kind,
        target,
        at,
        recoveryMs,
        ...extra,
      });
      switch (kind) {
        case "kill": {
          const victim = pick(instances.filter((i) => i.pid > 0)) as Instance;
          const index = instances.filter((i) => i.service === victim.service).indexOf(victim);
          const name = `${victim.service}#${index + 1}`;
          process.kill(victim.pid, "SIGKILL");
          victim.pid = 0;
          const restarted = restart(victim);
          const probe =
            victim.service === "gateway"
              ? probeGateway(gateways[index] as string)
              : (probeFor[victim.service] as () => () => Promise<boolean>)();
          const recovery = await firstSuccess(probe, at);
          await restarted;
          return done(name, recovery);
        }
        case "indexer-writer": {
          const writer = await indexerWriter();
          if (!writer) return done("no writer found", null);
          const killed = writer.pid;
          process.kill(writer.pid, "SIGKILL");
          writer.pid = 0;
          const restarted = restart(writer);
          const takeover = firstSuccess(async () => {
            const now = await indexerWriter();
            return now !== undefined && now !== writer;
          }, at);
          const recovery = await firstSuccess(probeIndexed(), at);
          const takeoverMs = await takeover;
          await restarted;
          return done(`chain-indexer writer (pid ${killed})`, recovery, { takeoverMs });
        }
        case "rabbitmq": {
          await rabbit.restart();
          return done("own RabbitMQ node", await firstSuccess(probeAdd, Date.now()));
        }
        case "redis": {
          await redis.restart();
          return done("own Redis", await firstSuccess(probeSignIn, Date.now()));
        }
        case "postgres": {
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
          return done(`${cut.rowCount} backends of ${dbName}`, await firstSuccess(probeAdd, back));
        }
        case "ipfs": {
          await sys.ipfsNode?.stop();
          await sleep(outageMs);
          await sys.ipfsNode?.start();
          return done("IPFS stand-in", await firstSuccess(probeAdd, Date.now()));
        }
        case "chain": {
          await proxy?.cut();
          await sleep(outageMs);
          await proxy?.restore();
          return done("chain RPC proxy", await firstSuccess(probeIndexed(), Date.now()));
        }
      }
    }

    // A supervisor (`pnpm start`, Kubernetes) starts a crashed instance again: so does the run, and counts it.
    const watcher = setInterval(() => {
      for (const instance of instances) {
        if (instance.pid > 0 && !alive(instance.pid)) {
          report.crashes.push(
            `${instance.service} (pid ${instance.pid}) at ${Math.round((Date.now() - began) / 1000)} s`,
          );
          instance.pid = 0;
          void restart(instance);
        }
      }
    }, 500);
    cleanups.unshift(async () => clearInterval(watcher));
    const began = Date.now();
    const stopAt = began + options.durationS * 1000;
    const load = [...workers.map((w) => workerLoop(w, stopAt)), chainLoop(stopAt)];
    const interval = (options.durationS * 1000) / (options.faults + 1);
    for (let i = 0; i < options.faults; i++) {
      const slot = began + interval * (i + 1);
      if (Date.now() < slot) await sleep(slot - Date.now());
      const kind = FAULT_CYCLE[i % FAULT_CYCLE.length] as FaultKind;
      // A fault that could not be injected is a miss, not the end of the run.
      const fault = await inject(kind).catch(
        (err: Error): FaultRecord => ({
          kind,
          target: `not injected: ${err.message}`.slice(0, 60),
          at: Date.now(),
          recoveryMs: null,
        }),
      );
      report.faults.push(fault);
      log(
        `fault ${i + 1}/${options.faults} ${fault.kind} ${fault.target}: recovery ${fault.recoveryMs ?? "none"} ms${
          fault.takeoverMs !== undefined ? `, standby took over in ${fault.takeoverMs ?? "-"} ms` : ""
        }`,
      );
    }
    await Promise.all(load);
    await chainQueue;
    report.seconds = Math.round((Date.now() - began) / 1000);
    log(`load stopped after ${report.seconds} s; checking`);

    // --- checks --------------------------------------------------------------------------------------
    // The index catches up with the chain first (every role change confirmed on chain).
    const head = await provider.getBlockNumber();
    await firstSuccess(async () => {
      const res = await fetch(`${sys.gatewayUrl}/EventDebug/Debug`);
      await res.arrayBuffer();
      return Number(res.headers.get("x-indexed-block")) >= head;
    }, Date.now());
    // Then the facts reach their consumers (the projects service's outbox, the bus): quiet for a moment.
    await sleep(2_000);

    report.acknowledged.adds = adds.size;
    report.acknowledged.ratings = ratings.size;
    report.acknowledged.invitations = invitations.size;
    report.acknowledged.accepts = accepts.size;

    const byId = new Map<number, string>();
    const fresh = new Map<Worker, string>();
    for (const [key, add] of adds) {
      const other = byId.get(add.projectID);
      if (other !== undefined && other !== key) report.duplicated.sameKeyOtherProject += 1;
      byId.set(add.projectID, key);
      let token = fresh.get(add.owner);
      if (token === undefined) {
        token = (await signIn(add.owner, sys.gatewayUrl)) ?? add.owner.token;
        fresh.set(add.owner, token);
      }
      const read = await call("GET", `/Project/Get/${add.projectID}`, { token, ip: add.owner.ip });
      const dto = read.body?.data as { projectName?: string; fileHash?: string } | undefined;
      if (read.status !== 200 || dto?.projectName !== add.name || dto?.fileHash !== add.fileHash) {
        report.lost.adds += 1;
        example(`lost Add ${add.projectID} ${add.name}: ${read.status} ${JSON.stringify(read.body)}`);
      }
      const cid = cidOfDigestHex(add.fileHash).toString();
      const pin = await fetch(`${sys.ipfsUrl}/api/v0/pin/ls?arg=${cid}&type=recursive`, { method: "POST" });
      await pin.arrayBuffer();
      if (pin.status !== 200) {
        report.lost.pins += 1;
        example(`Add ${add.projectID}: its content ${cid} is not pinned`);
      }
    }
    const q = async <T>(text: string, values: unknown[] = []) => (await sql.query(text, values)).rows as T[];
    const ratingRows = await q<{ project_id: number; user_id: number; value: number }>(
      "select project_id, user_id, value from projects.rating",
    );
    const ratingOf = new Map(ratingRows.map((r) => [`${r.project_id}:${r.user_id}`, Number(r.value)]));
    for (const [key, r] of ratings) {
      if (ratingOf.get(key) !== r.value) {
        report.lost.ratings += 1;
        example(`lost rating ${key}=${r.value}: stored ${ratingOf.get(key)}`);
      }
    }
    const permissions = await q<{ project_id: number; user_id: number; is_accepted: boolean }>(
      "select project_id, user_id, is_accepted from projects.permission",
    );
    const permissionOf = new Map(permissions.map((p) => [`${p.project_id}:${p.user_id}`, p]));
    for (const key of invitations.keys()) {
      if (!permissionOf.has(key)) {
        report.lost.invitations += 1;
        example(`lost invitation ${key}`);
      }
    }
    for (const key of accepts.keys()) {
      if (permissionOf.get(key)?.is_accepted !== true) {
        report.lost.accepts += 1;
        example(`lost acceptance ${key}`);
      }
    }
    const one = async (text: string) => Number((await q<{ n: string }>(text))[0]?.n ?? 0);
    report.duplicated.projects = await one(
      "select count(*) - count(distinct (proposer_address, file_hash)) as n from projects.project",
    );
    report.duplicated.memberships = await one(
      "select count(*) - count(distinct (project_id, user_id)) as n from projects.permission",
    );
    report.duplicated.owners = await one(
      "select count(*) as n from (select project_id from projects.permission where role = 'Owner' group by project_id having count(*) > 1) t",
    );
    report.duplicated.ratings = await one(
      "select count(*) - count(distinct (project_id, user_id)) as n from projects.rating",
    );
    report.duplicated.users = await one(
      'select count(*) - count(distinct lower(address)) as n from users."user"',
    );
    report.duplicated.facts = await one(
      "select count(*) - count(distinct (chain_id, tx_hash, log_index)) as n from projects.chain_fact",
    );
    report.duplicated.indexedLogs = await one(
      "select count(*) - count(distinct (chain_id, tx_hash, log_index)) as n from chain_indexer.log",
    );
    report.projectsWithoutOwner = await one(
      "select count(*) as n from projects.project p where not exists (select 1 from projects.permission o where o.project_id = p.id and o.role = 'Owner')",
    );
    report.ratingMeansOff = await one(
      "select count(*) as n from projects.project p where abs(p.rating - coalesce((select avg(value) from projects.rating r where r.project_id = p.id), 0)) > 1e-9",
    );

    // The index against the chain: every followed log once, and each address's whitelist status.
    const chainLogs = await provider.getLogs({
      address: [sys.deployment.registry, sys.deployment.factory],
      fromBlock: sys.deployment.startBlock,
      toBlock: head,
    });
    const onChain = new Set(
      chainLogs
        .filter((l) => eventByTopic.has(l.topics[0] as string))
        .map((l) => `${l.transactionHash.toLowerCase()}:${l.index}`),
    );
    const indexed = await q<{ tx_hash: string; log_index: number; block_number: string }>(
      "select tx_hash, log_index, block_number from chain_indexer.log where block_number <= $1",
      [head],
    );
    const inIndex = new Set(indexed.map((l) => `${l.tx_hash.toLowerCase()}:${l.log_index}`));
    report.index.chainLogs = onChain.size;
    report.index.indexedLogs = indexed.length;
    // Logs the indexer does not follow (role grants, say) are on chain but not in the index: only the
    // followed events count (topic 0).
    for (const l of chainLogs) {
      const key = `${l.transactionHash.toLowerCase()}:${l.index}`;
      if (eventByTopic.has(l.topics[0] as string) && !inIndex.has(key)) report.index.missing += 1;
    }
    for (const key of inIndex) if (!onChain.has(key)) report.index.extra += 1;
    for (const [address, status] of chainStatus) {
      const res = await call("GET", `/EventDebug/Whitelisted/${address}`, { ip: prober.ip });
      if (res.body?.data !== (status === UserStatus.Whitelisted)) {
        report.index.whitelistOff += 1;
        example(`Whitelisted/${address}: ${JSON.stringify(res.body?.data)}, chain status ${status}`);
      }
    }
    if (report.index.missing > 0) example(`logs on chain not indexed: ${report.index.missing}`);
    return report;
  } finally {
    for (const cleanup of cleanups) await cleanup().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

export const sum = (record: Record<string, number>) => Object.values(record).reduce((a, b) => a + b, 0);

/**
 * Whether a run met the targets: nothing lost or doubled, every answer in the envelope, no instance
 * crashed, the index equal to the chain, every recovery ≤ 10 s.
 */
export function targetsMet(r: ChaosReport, recoveryLimitMs = 10_000): boolean {
  return (
    sum(r.lost) === 0 &&
    sum(r.duplicated) === 0 &&
    r.nonEnvelope === 0 &&
    r.unexpected5xx === 0 &&
    r.projectsWithoutOwner === 0 &&
    r.crashes.length === 0 &&
    r.ratingMeansOff === 0 &&
    r.index.missing === 0 &&
    r.index.extra === 0 &&
    r.index.whitelistOff === 0 &&
    r.faults.every(
      (f) =>
        f.recoveryMs !== null &&
        f.recoveryMs <= recoveryLimitMs &&
        (f.takeoverMs === undefined || (f.takeoverMs !== null && f.takeoverMs <= recoveryLimitMs)),
    )
  );
}

export function formatReport(r: ChaosReport): string {
  const recoveries = r.faults.map((f) => f.recoveryMs ?? Number.POSITIVE_INFINITY);
  const lines = [
    `chaos: ${r.seconds} s of load, ${r.faults.length} faults, ${r.requests} requests (${Object.entries(
      r.statuses,
    )
      .map(([s, n]) => `${s}: ${n}`)
      .join(", ")}; no answer: ${r.connectionErrors})`,
    `acknowledged: ${r.acknowledged.adds} Adds, ${r.acknowledged.ratings} ratings, ${r.acknowledged.invitations} invitations, ${r.acknowledged.accepts} acceptances, ${r.acknowledged.roleChanges} chain role changes`,
    `lost: ${sum(r.lost)} (Adds ${r.lost.adds}, pins ${r.lost.pins}, ratings ${r.lost.ratings}, invitations ${r.lost.invitations}, acceptances ${r.lost.accepts})`,
    `duplicated: ${sum(r.duplicated)} (projects ${r.duplicated.projects}, same key other project ${r.duplicated.sameKeyOtherProject}, memberships ${r.duplicated.memberships}, owners ${r.duplicated.owners}, ratings ${r.duplicated.ratings}, users ${r.duplicated.users}, facts ${r.duplicated.facts}, indexed logs ${r.duplicated.indexedLogs})`,
    `non-envelope: ${r.nonEnvelope}; 5xx other than 503/504: ${r.unexpected5xx}`,
    `projects without an Owner: ${r.projectsWithoutOwner}; project ratings off their mean: ${r.ratingMeansOff}`,
    `index vs chain: ${r.index.chainLogs} logs on chain, ${r.index.indexedLogs} indexed, missing ${r.index.missing}, extra ${r.index.extra}; whitelist answers off the chain: ${r.index.whitelistOff}`,
    "recovery (first success on the fault's path):",
    ...r.faults.map(
      (f, i) =>
        `  ${String(i + 1).padStart(2)} ${f.kind.padEnd(14)} ${f.target.padEnd(34)} ${
          f.recoveryMs === null ? "NONE" : `${(f.recoveryMs / 1000).toFixed(2)} s`
        }${f.takeoverMs !== undefined ? `  (standby took the lock in ${f.takeoverMs === null ? "NONE" : `${(f.takeoverMs / 1000).toFixed(2)} s`})` : ""}`,
    ),
    `recovery max ${(Math.max(0, ...recoveries) / 1000).toFixed(2)} s; own RabbitMQ node start ${r.rabbitStartMs} ms`,
    `instances that crashed (started again): ${r.crashes.length}${r.crashes.length ? ` — ${r.crashes.join(", ")}` : ""}`,
    ...r.examples.map((e) => `  ! ${e}`),
    targetsMet(r)
      ? "targets met: 0 lost, 0 duplicated, 0 non-envelope, every recovery ≤ 10 s"
      : "TARGETS MISSED",
  ];
  return lines.join("\n");
}
