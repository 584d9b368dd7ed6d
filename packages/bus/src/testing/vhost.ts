import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";

const run = promisify(execFile);
const RABBITMQCTL = process.env.RABBITMQCTL ?? "rabbitmqctl";

async function rabbitmqctl(...args: string[]): Promise<string> {
  const { stdout } = await run(RABBITMQCTL, ["-q", ...args], { timeout: 30_000 });
  return stdout;
}

/** The broker's management HTTP API: RABBITMQ_API_URL, else port 15672 on AMQP_URL's host, its user. */
function managementUrl(): URL {
  if (process.env.RABBITMQ_API_URL) return new URL(process.env.RABBITMQ_API_URL);
  const amqp = new URL(process.env.AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672");
  const api = new URL(`http://${amqp.hostname}:15672/`);
  api.username = amqp.username || "guest";
  api.password = amqp.password || "guest";
  return api;
}

type Admin = (method: "PUT" | "DELETE", path: string, body?: unknown) => Promise<void>;

/**
 * How this process changes vhosts and permissions: the management API when it answers (a few ms a call;
 * `scripts/infra-up.sh` enables it), else `rabbitmqctl`, which boots an Erlang VM each call (about a
 * second of CPU). Asked once per process.
 */
let admin: Promise<Admin | null> | undefined;
function managementApi(): Promise<Admin | null> {
  admin ??= (async () => {
    const url = managementUrl();
    const authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString("base64")}`;
    url.username = "";
    url.password = "";
    const call: Admin = async (method, path, body) => {
      const res = await fetch(new URL(path, url), {
        method,
        headers: { authorization, "content-type": "application/json" },
        body: body === undefined ? null : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    };
    const answers = await fetch(new URL("api/overview", url), {
      headers: { authorization },
      signal: AbortSignal.timeout(2_000),
    }).then(
      (res) => res.ok,
      () => false,
    );
    return answers ? call : null;
  })();
  return admin;
}

const ALL = { configure: ".*", write: ".*", read: ".*" };
const vhostPath = (vhost: string) => `api/vhosts/${encodeURIComponent(vhost)}`;
const permissionsPath = (vhost: string) => `api/permissions/${encodeURIComponent(vhost)}/guest`;

/** A new vhost, open to the guest user. */
async function addVhost(vhost: string): Promise<void> {
  const api = await managementApi();
  if (api) await api("PUT", vhostPath(vhost));
  else await rabbitmqctl("add_vhost", vhost);
  await setAccess(vhost, true);
}

async function setAccess(vhost: string, allowed: boolean): Promise<void> {
  const api = await managementApi();
  if (api) return api(allowed ? "PUT" : "DELETE", permissionsPath(vhost), allowed ? ALL : undefined);
  if (allowed) await rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*");
  else await rabbitmqctl("clear_permissions", "-p", vhost, "guest");
}

async function deleteVhost(vhost: string): Promise<void> {
  const api = await managementApi();
  if (api) return api("DELETE", vhostPath(vhost));
  await rabbitmqctl("delete_vhost", vhost);
}

export interface TestVhost {
  /** The broker URL with this vhost, e.g. amqp://guest:guest@127.0.0.1:5672/bus_test_1a2b3c4d. */
  url: string;
  vhost: string;
  /** Forcibly closes every client connection of this vhost only (`rabbitmqctl close_all_connections -p`). */
  dropConnections(reason?: string): Promise<void>;
  /** Revokes the guest user's access: reconnects fail until allowAccess() (a broker that stays away). */
  denyAccess(): Promise<void>;
  allowAccess(): Promise<void>;
  /** Messages of a queue waiting for a consumer and delivered but not acknowledged (`rabbitmqctl list_queues`). */
  queueCounts(queue: string): Promise<{ ready: number; unacknowledged: number }>;
  /**
   * The same for every queue of the vhost, from one `rabbitmqctl list_queues` (a second or more on a busy
   * machine): a message moving between queues is not missed between two calls.
   */
  allQueueCounts(): Promise<Map<string, { ready: number; unacknowledged: number }>>;
  /** Deletes the vhost and everything in it. */
  dispose(): Promise<void>;
}

/**
 * A throwaway vhost for one test file: queues, exchanges and connections of parallel test files never
 * meet. Made and removed through the management API where it answers, else `rabbitmqctl` (root, or the
 * rabbitmq user), which also counts queues and closes connections (the API's figures lag by seconds).
 * Base URL from AMQP_URL or the local default.
 */
export async function createTestVhost(prefix = "bus_test"): Promise<TestVhost> {
  const vhost = `${prefix}_${randomBytes(4).toString("hex")}`;
  await addVhost(vhost);
  const base = new URL(process.env.AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672");
  base.pathname = `/${encodeURIComponent(vhost)}`;
  const allQueueCounts = async () => {
    const out = await rabbitmqctl(
      "list_queues",
      "-p",
      vhost,
      "--no-table-headers",
      "name",
      "messages_ready",
      "messages_unacknowledged",
    );
    const counts = new Map<string, { ready: number; unacknowledged: number }>();
    for (const [name, ready, unacknowledged] of out.split("\n").map((line) => line.trim().split(/\s+/))) {
      if (name) counts.set(name, { ready: Number(ready), unacknowledged: Number(unacknowledged) });
    }
    return counts;
  };
  return {
    url: base.toString(),
    vhost,
    async dropConnections(reason = "test") {
      await rabbitmqctl("close_all_connections", "-p", vhost, reason);
    },
    denyAccess: () => setAccess(vhost, false),
    allowAccess: () => setAccess(vhost, true),
    allQueueCounts,
    async queueCounts(queue) {
      const counts = (await allQueueCounts()).get(queue);
      if (!counts) throw new Error(`no queue ${queue} in ${vhost}`);
      return counts;
    },
    dispose: () => deleteVhost(vhost),
  };
}

/** Polls `predicate` until it holds; rejects after `timeoutMs` with `what` in the message. */
export async function waitFor(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  what = "condition",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
