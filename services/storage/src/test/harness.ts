import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type IpfsNode, startIpfsNode } from "@fundraise/ipfs-node";
import { type EventDescriptor, type PayloadOf, StorageEvents } from "@fundraise/protocol";
import {
  type HarnessService,
  outboxPayloads as kitOutboxPayloads,
  receivedEvent as kitReceivedEvent,
  type ServiceHarness,
  startServiceHarness,
} from "@fundraise/service-kit/testing";
import { create } from "kubo-rpc-client";
import type pg from "pg";
import { expect } from "vitest";
import { type StorageApp, startStorageApp } from "../app.ts";
import { loadConfig } from "../config.ts";
import { CONSUMER } from "../content/content.service.ts";
import { STORAGE_SCHEMA } from "../content/pin.repository.ts";
import { type ProjectsStandIn, projectsStandIn } from "./projects-stand-in.ts";

/**
 * The storage service as the projects service meets it: its own database and vhost per test file, the
 * service on one bus and the test on a second (`client`, which publishes the projects service's content
 * events). IPFS is OUR KUBO-RPC STAND-IN (packages/ipfs-node, not Kubo) on a free loopback port with a
 * temporary data dir, or a real Kubo when `IPFS_API_URL` is set (then `node` is null and the tests that
 * stop the node are skipped). The calls storage makes of the projects service are answered by
 * `projects`, A STAND-IN FOR THE PROJECTS SERVICE (projects-stand-in.ts), started unless told not to.
 * The reconciliation's timer is off unless `RECONCILE_INTERVAL_MS` is given: tests run rounds with
 * `app.reconcile()`.
 */
export interface Harness extends ServiceHarness {
  app: StorageApp;
  ipfsUrl: string;
  /** The stand-in node (null against a real Kubo). */
  node: IpfsNode | null;
  projects: ProjectsStandIn;
}

export const REAL_KUBO_URL = process.env.IPFS_API_URL;

/** The storage service on a node: the stand-in by default (a temporary data dir), or `IPFS_API_URL`'s Kubo. */
export function storageOn(
  node: { url: string },
  env: Record<string, string> = {},
  clock?: () => number,
  releaseWindowMs?: number,
): HarnessService {
  return {
    name: "storage",
    start: ({ env: base, ...deps }) =>
      startStorageApp({
        config: loadConfig({
          ...base,
          IPFS_API_URL: node.url,
          IPFS_TIMEOUT_MS: "5000",
          IPFS_READ_TIMEOUT_MS: "3000",
          IPFS_STARTUP_WAIT_MS: "0",
          RECONCILE_INTERVAL_MS: "0",
          ...env,
        }),
        ...deps,
        ...(clock ? { clock } : {}),
        ...(releaseWindowMs ? { releaseWindowMs } : {}),
      }),
  };
}

export async function startHarness(
  label: string,
  env: Record<string, string> = {},
  clock?: () => number,
  options: { projects?: boolean } = {},
): Promise<Harness> {
  const dataDir = mkdtempSync(join(tmpdir(), "storage-ipfs-"));
  const node = REAL_KUBO_URL ? null : await startIpfsNode({ dataDir });
  const ipfsUrl = REAL_KUBO_URL ?? (node as IpfsNode).url;
  const h = await startServiceHarness({
    label: `storage_${label}`,
    services: [storageOn({ url: ipfsUrl }, env, clock)],
    record: StorageEvents,
  });
  const projects = projectsStandIn(h.vhost.url);
  if (options.projects !== false) await projects.start();
  return {
    ...h,
    app: h.apps[0] as StorageApp,
    ipfsUrl,
    node,
    projects,
    async stop() {
      await projects.stop();
      await h.stop();
      await node?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Publishes an event (the projects service's `taken`, `dropped`) from the test client, as its outbox does. */
export async function publish<D extends EventDescriptor>(
  h: Harness,
  event: D,
  payload: PayloadOf<D>,
  messageId?: string,
): Promise<void> {
  await h.client.publish(event, payload, messageId ? { messageId } : {});
}

/** Waits until storage's queue of this event has nothing ready or in hand: every delivery so far handled. */
export async function drained(h: Harness, event: EventDescriptor): Promise<void> {
  await expect
    .poll(
      async () => {
        const { ready, unacknowledged } = await h.vhost.queueCounts(`${CONSUMER}.${event.name}`);
        return ready + unacknowledged;
      },
      // Each look is a `rabbitmqctl list_queues`: about a second, several on a busy machine.
      { timeout: 60_000, interval: 100 },
    )
    .toBe(0);
}

/** Makes the content's live pin look recorded `ms` ago (the grace period counts from there). */
export async function agePin(sql: pg.Pool, fileHash: string, ms: number): Promise<void> {
  await sql.query(
    `update storage.pin set pinned_at = now() - make_interval(secs => $2::float8 / 1000),
       last_uploaded_at = now() - make_interval(secs => $2::float8 / 1000)
     where file_hash = $1 and unpinned_at is null`,
    [fileHash, ms],
  );
}

/** Whether the IPFS node pins this CID (recursively), asked through the Kubo RPC API. */
export async function nodePins(ipfsUrl: string, cid: string): Promise<boolean> {
  const ipfs = create({ url: ipfsUrl });
  for await (const pin of ipfs.pin.ls({ type: "recursive" })) if (pin.cid.toString() === cid) return true;
  return false;
}

/** Rows of the pin inventory, oldest first. */
export async function pinRows(sql: pg.Pool) {
  const { rows } = await sql.query<{
    cid: string;
    file_hash: string;
    reason: string;
    file_bytes: number | null;
    image_bytes: number | null;
    unpinned_at: Date | null;
    unpin_reason: string | null;
  }>(
    `select cid, file_hash, reason, file_bytes, image_bytes, unpinned_at, unpin_reason from storage.pin order by id`,
  );
  return rows;
}

export { expectAppError } from "@fundraise/service-kit/testing";
export {
  type Added,
  addContent,
  addWhitepaper,
  type Content,
  contentNotOnNode,
  readWhitepaper,
  takenOf,
} from "./content.ts";
export type { ProjectsStandIn } from "./projects-stand-in.ts";

/** Events of one kind in the storage outbox (published or not), oldest first. */
export const outboxPayloads = <D extends EventDescriptor>(sql: pg.Pool, event: D) =>
  kitOutboxPayloads(sql, STORAGE_SCHEMA, event);

/** Waits until the test consumer received an event of this kind matching `match`; returns its payload. */
export const receivedEvent = <D extends EventDescriptor>(
  h: Harness,
  event: D,
  match: Partial<PayloadOf<D>>,
) => kitReceivedEvent(h.events, event, match);
