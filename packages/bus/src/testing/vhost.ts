import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";

const run = promisify(execFile);
const RABBITMQCTL = process.env.RABBITMQCTL ?? "rabbitmqctl";

async function rabbitmqctl(...args: string[]): Promise<string> {
  const { stdout } = await run(RABBITMQCTL, ["-q", ...args], { timeout: 30_000 });
  return stdout;
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
 * meet. Needs `rabbitmqctl` (root, or the rabbitmq user). Base URL from AMQP_URL or the local default.
 */
export async function createTestVhost(prefix = "bus_test"): Promise<TestVhost> {
  const vhost = `${prefix}_${randomBytes(4).toString("hex")}`;
  await rabbitmqctl("add_vhost", vhost);
  await rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*");
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
    async denyAccess() {
      await rabbitmqctl("clear_permissions", "-p", vhost, "guest");
    },
    async allowAccess() {
      await rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*");
    },
    allQueueCounts,
    async queueCounts(queue) {
      const counts = (await allQueueCounts()).get(queue);
      if (!counts) throw new Error(`no queue ${queue} in ${vhost}`);
      return counts;
    },
    async dispose() {
      await rabbitmqctl("delete_vhost", vhost);
    },
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
