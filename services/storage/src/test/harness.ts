import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AmqpBus, createAmqpBus } from "@fundraise/bus";
import { createTestVhost, type TestVhost, waitFor } from "@fundraise/bus/testing";
import { type IpfsNode, startIpfsNode } from "@fundraise/ipfs-node";
import { type EventDescriptor, isAppError, type PayloadOf, StorageEvents } from "@fundraise/protocol";
import type { ServiceApp } from "@fundraise/service-kit";
import { silentLogger } from "@fundraise/service-kit";
import { createTestDatabase, type TestDatabase } from "@fundraise/service-kit/testing";
import pg from "pg";
import { expect } from "vitest";
import { startStorageApp } from "../app.ts";
import { loadConfig } from "../config.ts";

/**
 * The storage service as the projects service meets it: its own database and vhost per test file, the
 * service on one bus and the test on a second (`client`). IPFS is OUR KUBO-RPC STAND-IN
 * (packages/ipfs-node, not Kubo) on a free loopback port with a temporary data dir, or a real Kubo when
 * `IPFS_API_URL` is set (then `node` is null and the tests that stop the node are skipped).
 */
export interface Harness {
  client: AmqpBus;
  sql: pg.Pool;
  app: ServiceApp;
  ipfsUrl: string;
  /** The stand-in node (null against a real Kubo). */
  node: IpfsNode | null;
  events: { name: string; payload: Record<string, unknown> }[];
  stop(): Promise<void>;
}

export const REAL_KUBO_URL = process.env.IPFS_API_URL;

export async function startHarness(label: string, env: Record<string, string> = {}): Promise<Harness> {
  const [db, vhost]: [TestDatabase, TestVhost] = await Promise.all([
    createTestDatabase(`storage_${label}`),
    createTestVhost(`storage_${label}`),
  ]);
  const dataDir = mkdtempSync(join(tmpdir(), "storage-ipfs-"));
  const node = REAL_KUBO_URL ? null : await startIpfsNode({ dataDir });
  const ipfsUrl = REAL_KUBO_URL ?? node!.url;
  const config = loadConfig({
    DATABASE_URL: db.url,
    AMQP_URL: vhost.url,
    LOG_LEVEL: "silent",
    IPFS_API_URL: ipfsUrl,
    IPFS_TIMEOUT_MS: "5000",
    IPFS_READ_TIMEOUT_MS: "3000",
    IPFS_STARTUP_WAIT_MS: "0",
    ...env,
  });
  const bus = await createAmqpBus({ url: vhost.url, service: "storage", logger: silentLogger() });
  const client = await createAmqpBus({ url: vhost.url, service: "test-client", logger: silentLogger() });
  const events: Harness["events"] = [];
  for (const event of Object.values(StorageEvents) as EventDescriptor[]) {
    await client.subscribe("test", event, async (payload) => {
      events.push({ name: event.name, payload: payload as Record<string, unknown> });
    });
  }
  const app = await startStorageApp({ config, log: silentLogger(), bus });
  const sql = new pg.Pool({ connectionString: db.url, max: 4 });
  return {
    client,
    sql,
    app,
    ipfsUrl,
    node,
    events,
    async stop() {
      await client.close();
      await bus.close();
      await app.stop();
      await sql.end();
      await node?.stop();
      rmSync(dataDir, { recursive: true, force: true });
      await Promise.all([db.dispose(), vhost.dispose()]);
    },
  };
}

/** Expects the call to fail with exactly this error kind and code (as rehydrated from the reply). */
export async function expectAppError(call: Promise<unknown>, kind: string, code: string): Promise<void> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, `expected ${kind}/${code}, the call succeeded`).toBeDefined();
  expect(isAppError(error), `not an AppError: ${String(error)}`).toBe(true);
  expect({ kind: (error as { kind: string }).kind, code: (error as { code: string }).code }).toEqual({
    kind,
    code,
  });
}

/** Rows of the pin inventory, oldest first. */
export async function pinRows(sql: pg.Pool) {
  const { rows } = await sql.query<{
    cid: string;
    file_hash: string;
    reason: string;
    unpinned_at: Date | null;
    unpin_reason: string | null;
  }>(`select cid, file_hash, reason, unpinned_at, unpin_reason from storage.pin order by id`);
  return rows;
}

/** Events of one kind in the outbox (published or not), oldest first. */
export async function outboxPayloads<D extends EventDescriptor>(
  sql: pg.Pool,
  event: D,
): Promise<PayloadOf<D>[]> {
  const { rows } = await sql.query<{ payload: PayloadOf<D> }>(
    `select convert_from(payload, 'UTF8')::jsonb as payload from storage.outbox where event_name = $1 order by seq`,
    [event.name],
  );
  return rows.map((r) => r.payload);
}

/** Waits until the test consumer received an event of this kind matching `match`; returns its payload. */
export async function receivedEvent<D extends EventDescriptor>(
  h: Harness,
  event: D,
  match: Partial<PayloadOf<D>>,
): Promise<PayloadOf<D>> {
  const matches = (e: Harness["events"][number]) =>
    e.name === event.name && Object.entries(match).every(([k, v]) => e.payload[k] === v);
  await waitFor(() => h.events.some(matches), 10_000, `${event.name} ${JSON.stringify(match)}`);
  return h.events.find(matches)!.payload as PayloadOf<D>;
}
