import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AmqpBus, createAmqpBus } from "@fundraise/bus";
import { createTestVhost, type TestVhost, waitFor } from "@fundraise/bus/testing";
import { type IpfsNode, startIpfsNode } from "@fundraise/ipfs-node";
import {
  type Caller,
  type EventDescriptor,
  isAppError,
  type PayloadOf,
  ProjectsEvents,
  ProjectsRpc,
  type UserRole,
} from "@fundraise/protocol";
import type { ServiceApp } from "@fundraise/service-kit";
import { silentLogger } from "@fundraise/service-kit";
import { createTestDatabase, type TestDatabase } from "@fundraise/service-kit/testing";
import { startStorageApp } from "@fundraise/storage/src/app.ts";
import { loadConfig as loadStorageConfig } from "@fundraise/storage/src/config.ts";
import { startUsersApp } from "@fundraise/users/src/app.ts";
import { loadConfig as loadUsersConfig } from "@fundraise/users/src/config.ts";
import { type SeededUser, seedUser } from "@fundraise/users/src/test/harness.ts";
import pg from "pg";
import { expect } from "vitest";
import { startProjectsApp } from "../app.ts";
import { loadConfig } from "../config.ts";

/**
 * The projects service as the gateway meets it, with the REAL storage and users services beside it: one
 * database per test file (each service in its own schema, as in production), one vhost, and IPFS on OUR
 * KUBO-RPC STAND-IN (packages/ipfs-node, not Kubo) with a temporary data dir. The test calls over a
 * second bus (`client`) the way the gateway does, and records every projects.* event.
 */
export interface Harness {
  client: AmqpBus;
  /** Direct SQL on the test database (schemas projects, storage, users). */
  sql: pg.Pool;
  app: ServiceApp;
  node: IpfsNode;
  events: { name: string; payload: Record<string, unknown> }[];
  stop(): Promise<void>;
}

export async function startHarness(label: string, env: Record<string, string> = {}): Promise<Harness> {
  const [db, vhost]: [TestDatabase, TestVhost] = await Promise.all([
    createTestDatabase(`projects_${label}`),
    createTestVhost(`projects_${label}`),
  ]);
  const dataDir = mkdtempSync(join(tmpdir(), "projects-ipfs-"));
  const node = await startIpfsNode({ dataDir });
  const common = { DATABASE_URL: db.url, AMQP_URL: vhost.url, LOG_LEVEL: "silent" };
  const busOf = (service: string) => createAmqpBus({ url: vhost.url, service, logger: silentLogger() });
  const [storageBus, usersBus, projectsBus, client] = await Promise.all([
    busOf("storage"),
    busOf("users"),
    busOf("projects"),
    busOf("test-client"),
  ]);
  const events: Harness["events"] = [];
  for (const event of Object.values(ProjectsEvents) as EventDescriptor[]) {
    await client.subscribe("test", event, async (payload) => {
      events.push({ name: event.name, payload: payload as Record<string, unknown> });
    });
  }
  const storage = await startStorageApp({
    config: loadStorageConfig({
      ...common,
      IPFS_API_URL: node.url,
      IPFS_TIMEOUT_MS: "5000",
      IPFS_READ_TIMEOUT_MS: "3000",
      IPFS_STARTUP_WAIT_MS: "0",
    }),
    log: silentLogger(),
    bus: storageBus,
  });
  const users = await startUsersApp({ config: loadUsersConfig(common), log: silentLogger(), bus: usersBus });
  const app = await startProjectsApp({
    config: loadConfig({ ...common, ...env }),
    log: silentLogger(),
    bus: projectsBus,
  });
  const sql = new pg.Pool({ connectionString: db.url, max: 4 });
  return {
    client,
    sql,
    app,
    node,
    events,
    async stop() {
      await client.close();
      for (const bus of [projectsBus, usersBus, storageBus]) await bus.close();
      await app.stop();
      await users.stop();
      await storage.stop();
      await sql.end();
      await node.stop();
      rmSync(dataDir, { recursive: true, force: true });
      await Promise.all([db.dispose(), vhost.dispose()]);
    },
  };
}

export type { SeededUser };

/** A verified user of the real users service (its table), and the caller the gateway would pass for it. */
export async function seed(
  h: Harness,
  role: UserRole = "Base",
): Promise<{ user: SeededUser; caller: Caller }> {
  const user = await seedUser(h.sql, { role });
  return { user, caller: { userId: user.id, username: user.username, address: user.address, role } };
}

let sequence = 0;
export const uniqueProjectName = (prefix = "Project") =>
  `${prefix} ${++sequence} ${randomBytes(3).toString("hex")}`;
/** Bytes no other test uploads, so every project gets its own fileHash. */
export const uniqueBytes = (size = 64) => new Uint8Array(randomBytes(size));

/** Adds a project through the RPC as `caller` (a fresh name and file unless told). */
export function addProject(
  h: Harness,
  caller: Caller,
  project: Partial<{
    projectName: string;
    projectDescription: string | null;
    markDown: string | null;
    file: Uint8Array | null;
    image: Uint8Array | null;
  }> = {},
) {
  return h.client.call(ProjectsRpc.add, {
    caller,
    project: {
      projectName: uniqueProjectName(),
      projectDescription: "A description",
      markDown: null,
      file: uniqueBytes(),
      image: null,
      ...project,
    },
  });
}

/** Sets what viewers and the chain decide, straight in the table (the chain-indexer does not exist yet). */
export async function setReview(
  h: Harness,
  projectId: number,
  state: {
    viewerAccepted?: boolean;
    status?: "Pending" | "Approved" | "Rejected";
    isAuctionCreated?: boolean;
  },
): Promise<void> {
  await h.sql.query(
    `update projects.project set viewer_accepted = coalesce($2, viewer_accepted), status = coalesce($3, status),
       is_auction_created = coalesce($4, is_auction_created) where id = $1`,
    [projectId, state.viewerAccepted ?? null, state.status ?? null, state.isAuctionCreated ?? null],
  );
}

/** Whether the storage service holds a live pin of this content. */
export async function isPinned(h: Harness, fileHash: string): Promise<boolean> {
  const { rows } = await h.sql.query(
    `select 1 from storage.pin where file_hash = $1 and unpinned_at is null`,
    [fileHash],
  );
  return rows.length > 0;
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

/** Events of one kind in the outbox (published or not), oldest first: what the service committed to send. */
export async function outboxPayloads<D extends EventDescriptor>(
  sql: pg.Pool,
  event: D,
): Promise<PayloadOf<D>[]> {
  const { rows } = await sql.query<{ payload: PayloadOf<D> }>(
    `select convert_from(payload, 'UTF8')::jsonb as payload from projects.outbox where event_name = $1 order by seq`,
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
