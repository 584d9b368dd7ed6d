import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cidOfFileHash, createKuboIpfs, fileHashOf, type Releaser, releaseAndUnpin } from "@fundraise/ipfs";
import { type IpfsNode, kuboDirectoryCidOf, startIpfsNode } from "@fundraise/ipfs-node";
import {
  type Caller,
  CONTENT_RELEASE_WINDOW_MS,
  type ContentRef,
  ErrorCode,
  isAppError,
  type ProjectStatus,
  ProjectsEvents,
  ProjectsRpc,
  type UserRole,
} from "@fundraise/protocol";
import type { ServiceApp } from "@fundraise/service-kit";
import {
  harnessOfFile,
  type ServiceHarness,
  serviceEvents,
  startServiceHarness,
} from "@fundraise/service-kit/testing";
import type { StorageApp } from "@fundraise/storage/src/app.ts";
import { addContent, nodePins, storageOn } from "@fundraise/storage/src/test/harness.ts";
import {
  type SeededUser,
  type SessionStandIn,
  seedUser,
  sessionStandIn,
  usersService,
} from "@fundraise/users/src/test/harness.ts";
import { expect } from "vitest";
import { startProjectsApp } from "../app.ts";
import { loadConfig } from "../config.ts";
import { PROJECTS_SCHEMA } from "../projects/project.repository.ts";

/**
 * The projects service as the gateway meets it, with the REAL storage and users services beside it
 * (service-kit `startServiceHarness`: one database, each service in its own schema, one vhost), IPFS on
 * OUR KUBO-RPC STAND-IN (packages/ipfs-node, not Kubo) with a temporary data dir, and a STAND-IN for the
 * auth service's session (`auth.session.apply`, which the users service calls on deletions and role
 * changes; the real one needs a chain and is met in e2e).
 */
export interface Harness extends ServiceHarness {
  app: ServiceApp;
  sessions: SessionStandIn;
  /** The storage service (its `reconcile()` runs a reconciliation round now). */
  storage: StorageApp;
  /** The IPFS stand-in as it runs now (a new object after `restartIpfs`, on the same URL). */
  node: IpfsNode;
  /** The stand-in's RPC API, where the gateway adds content. */
  ipfsUrl: string;
  /** Stops the IPFS stand-in under the running services; its data dir stays. */
  stopIpfs(): Promise<void>;
  /** Starts the IPFS stand-in again on the same port and data dir: what it held before is there again. */
  restartIpfs(): Promise<void>;
}

/**
 * `env` is the projects service's; `options.storageEnv` the storage service's (no reconciliation timer
 * unless `RECONCILE_INTERVAL_MS`), `storageClock` its clock (rows' dates, grace periods: tests move it).
 */
export async function startHarness(
  label: string,
  env: Record<string, string> = {},
  options: { storageEnv?: Record<string, string>; storageClock?: () => number } = {},
): Promise<Harness> {
  const dataDir = mkdtempSync(join(tmpdir(), "projects-ipfs-"));
  let node = await startIpfsNode({ dataDir });
  const { port } = node;
  const sessions = sessionStandIn();
  const h = await startServiceHarness({
    label: `projects_${label}`,
    services: [
      storageOn(node, options.storageEnv, options.storageClock),
      sessions,
      usersService,
      {
        name: "projects",
        // No chain unless a test gives one: "sync now" then has neither the index nor the chain.
        start: ({ env: base, ...deps }) => {
          const chainless = { CHAIN_DEPLOYMENT_FILE: join(dataDir, "no-chain-deployment.json") };
          return startProjectsApp({ config: loadConfig({ ...base, ...chainless, ...env }), ...deps });
        },
      },
    ],
    record: ProjectsEvents,
  });
  return {
    ...h,
    app: h.apps[3] as ServiceApp,
    sessions,
    storage: h.apps[0] as StorageApp,
    get node() {
      return node;
    },
    get ipfsUrl() {
      return node.url;
    },
    stopIpfs: () => node.stop(),
    async restartIpfs() {
      await node.stop();
      node = await startIpfsNode({ dataDir, port });
    },
    async stop() {
      await h.stop();
      await node.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The harness of this test file (`startHarness`'s arguments): started before its tests, stopped after them. */
export const useHarness = (...args: Parameters<typeof startHarness>): Harness =>
  harnessOfFile(() => startHarness(...args));

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

/**
 * Runs a write (Add, Update) with its file and image added to the IPFS node first, pinned, as the gateway
 * adds them (ADR 0027). Nothing more: a refused write's content stays pinned; CONTENT_RELEASED is an answer.
 */
export async function withContent<T>(
  h: Harness,
  content: { file: Uint8Array | null; image: Uint8Array | null },
  write: (content: ContentRef | null) => Promise<T>,
): Promise<T> {
  return write(await addContent(h.node.url, content));
}

export type ContentPath = typeof withContent; // how a test sends a write's content: this or asGateway

/**
 * `withContent` as A STAND-IN FOR THE GATEWAY'S WRITE PROTOCOL (gateway's uploads/released.ts, plugin.ts):
 * on CONTENT_RELEASED it asks again while an unpin may land (`waitMs` > 0), else pins the content again and
 * writes with `repinnedAfter`; another failure is the answer once the content it pinned is released
 * (`releaseAndUnpin`: never content a project holds; awaited here, not in the background).
 */
export const asGateway: ContentPath = async (h, content, write) => {
  let ref = await addContent(h.node.url, content);
  const node = createKuboIpfs({ url: h.ipfsUrl, timeoutMs: 10_000, readTimeoutMs: 10_000 });
  const releaser: Releaser = {
    release: (fileHashes, reason) => h.client.call(ProjectsRpc.releaseContent, { fileHashes, reason }),
    confirm: async (releases) => void (await h.client.call(ProjectsRpc.confirmRelease, { releases })),
  };
  const until = performance.now() + CONTENT_RELEASE_WINDOW_MS + 15_000;
  for (;;) {
    try {
      return await write(ref);
    } catch (error) {
      if (!ref) throw error;
      if (isAppError(error) && error.code === ErrorCode.CONTENT_RELEASED && performance.now() < until) {
        const { version, waitMs } = error.details as { version: number; waitMs: number };
        if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(waitMs, 250)));
        else {
          await node.pin(cidOfFileHash(fileHashOf(ref.cid)));
          ref = { ...ref, repinnedAfter: version };
        }
        continue;
      }
      const refused = [fileHashOf(ref.cid)];
      await releaseAndUnpin({ ipfs: node, releaser }, refused, "gateway:write-refused").catch(
        () => undefined,
      );
      throw error;
    }
  }
};

/** The fileHash of this file (and image) added as the gateway adds them, computed without the node. */
export const fileHashOfContent = async (file: Uint8Array, image: Uint8Array | null = null) =>
  fileHashOf(await kuboDirectoryCidOf(image ? { whitepaper: file, image } : { whitepaper: file }));

type ProjectFields = { projectName: string; projectDescription: string | null; markDown: string | null };
type Files = { file: Uint8Array | null; image: Uint8Array | null };

/** Adds a project through the RPC as `caller` (a fresh name and file unless told). */
export function addProject(
  h: Harness,
  caller: Caller,
  project: Partial<ProjectFields & Files> = {},
  send: ContentPath = withContent,
) {
  const { file = uniqueBytes(), image = null, ...fields } = project;
  return send(h, { file, image }, (content) =>
    h.client.call(ProjectsRpc.add, {
      caller,
      project: {
        projectName: uniqueProjectName(),
        projectDescription: "A description",
        markDown: null,
        ...fields,
        content,
      },
    }),
  );
}

/** Updates a project through the RPC as `caller`, with a new file (and image) when given. */
export function updateProject(
  h: Harness,
  caller: Caller,
  project: { projectID: number; projectName: string } & Partial<ProjectFields & Files>,
  send: ContentPath = withContent,
) {
  const { file = null, image = null, ...fields } = project;
  return send(h, { file, image }, (content) =>
    h.client.call(ProjectsRpc.update, {
      caller,
      project: { projectDescription: null, markDown: null, ...fields, content },
    }),
  );
}

/** Sets what viewers and the chain decide, straight in the table (the chain-indexer does not exist yet). */
export async function setReview(
  h: Harness,
  projectId: number,
  state: Partial<{ viewerAccepted: boolean; status: ProjectStatus; isAuctionCreated: boolean }>,
): Promise<void> {
  await h.sql.query(
    `update projects.project set viewer_accepted = coalesce($2, viewer_accepted), status = coalesce($3, status),
       is_auction_created = coalesce($4, is_auction_created) where id = $1`,
    [projectId, state.viewerAccepted ?? null, state.status ?? null, state.isAuctionCreated ?? null],
  );
}

/** Whether the IPFS node pins this content (recursively): what keeps it from the node's garbage collection. */
export const isPinned = (h: Harness, fileHash: string) =>
  nodePins(h.ipfsUrl, cidOfFileHash(fileHash).toString());

/** Whether the storage service's inventory has a live row of this content (from `content.taken`). */
export const isRecorded = async (h: Harness, fileHash: string) =>
  (await h.sql.query(`select 1 from storage.pin where file_hash = $1 and unpinned_at is null`, [fileHash]))
    .rowCount === 1;

/**
 * Waits until the storage service has handled every content event (`taken`, `dropped`) the projects service
 * committed so far: each one's claim (its message id, the outbox row's) is in storage's `processed_message`.
 */
export async function contentSettled(h: Harness): Promise<void> {
  const events = [ProjectsEvents.contentTaken.name, ProjectsEvents.contentDropped.name];
  const unhandled = `select count(*)::int as n from projects.outbox o where o.event_name = any($1) and not exists
    (select 1 from storage.processed_message m where m.consumer = 'storage' and m.message_key = o.id::text)`;
  const count = async () => (await h.sql.query(unhandled, [events])).rows[0].n;
  await expect.poll(count, { timeout: 30_000, interval: 50 }).toBe(0);
}

/**
 * Runs `work` while rows of `table` that match `when` (SQL on `new`, or `old` for an update or delete)
 * refuse `write` with `message`: a trigger `name` (its function in the table's schema), dropped afterwards.
 */
export async function whileRefusing<T>(
  h: Harness,
  refusal: {
    name: string;
    table: string;
    write: "insert" | "update" | "delete";
    when: string;
    message: string;
  },
  work: () => Promise<T>,
): Promise<T> {
  const { name, table, write, when, message } = refusal;
  const fn = `${table.split(".")[0]}.${name}`;
  await h.sql.query(
    `create function ${fn}() returns trigger language plpgsql as $$ begin raise exception '${message}'; end $$`,
  );
  await h.sql.query(
    `create trigger ${name} before ${write} on ${table} for each row when (${when}) execute function ${fn}()`,
  );
  try {
    return await work();
  } finally {
    await h.sql.query(`drop trigger ${name} on ${table}`);
    await h.sql.query(`drop function ${fn}()`);
  }
}

export { expectAppError } from "@fundraise/service-kit/testing";
export { readWhitepaper } from "@fundraise/storage/src/test/harness.ts";

/** Events in the projects outbox, and those the test consumer received (service-kit's serviceEvents). */
export const { outboxPayloads, receivedEvent } = serviceEvents(PROJECTS_SCHEMA);
