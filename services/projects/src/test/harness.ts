import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type IpfsNode, startIpfsNode } from "@fundraise/ipfs-node";
import {
  type Caller,
  type ContentRef,
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
import { addContent, storageOn } from "@fundraise/storage/src/test/harness.ts";

export { readWhitepaper } from "@fundraise/storage/src/test/harness.ts";

import {
  type SeededUser,
  type SessionStandIn,
  seedUser,
  sessionStandIn,
  usersService,
} from "@fundraise/users/src/test/harness.ts";
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
  /** The storage service (its `reconcile()` runs an orphan reconciliation round now). */
  storage: StorageApp;
  /** The IPFS stand-in as it runs now (a new object after `restartIpfs`, on the same URL). */
  node: IpfsNode;
  /** The stand-in's RPC API, where the gateway would add content. */
  ipfsUrl: string;
  /** Stops the IPFS stand-in under the running services; its data dir stays. */
  stopIpfs(): Promise<void>;
  /** Starts the IPFS stand-in again on the same port and data dir: what it held before is there again. */
  restartIpfs(): Promise<void>;
}

/**
 * `env` is the projects service's; `options.storageEnv` the storage service's (its reconciliation timer is
 * off unless `RECONCILE_INTERVAL_MS` is given).
 */
export async function startHarness(
  label: string,
  env: Record<string, string> = {},
  options: { storageEnv?: Record<string, string> } = {},
): Promise<Harness> {
  const dataDir = mkdtempSync(join(tmpdir(), "projects-ipfs-"));
  let node = await startIpfsNode({ dataDir });
  const { port } = node;
  const sessions = sessionStandIn();
  const h = await startServiceHarness({
    label: `projects_${label}`,
    services: [
      storageOn(node, options.storageEnv),
      sessions,
      usersService,
      {
        name: "projects",
        // No chain unless a test gives one: "sync now" then has neither the index nor the chain.
        start: ({ env: base, ...deps }) =>
          startProjectsApp({
            config: loadConfig({
              ...base,
              CHAIN_DEPLOYMENT_FILE: join(dataDir, "no-chain-deployment.json"),
              ...env,
            }),
            ...deps,
          }),
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

/**
 * Runs a write (Add, Update) with its file and image as the gateway sends them: added to the IPFS node
 * first (unpinned), then the write with their reference.
 */
export async function withContent<T>(
  h: Harness,
  content: { file: Uint8Array | null; image: Uint8Array | null },
  write: (content: ContentRef | null) => Promise<T>,
): Promise<T> {
  return write(await addContent(h.node.url, content));
}

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
  const { file = uniqueBytes(), image = null, ...fields } = project;
  return withContent(h, { file, image }, (content) =>
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
  project: {
    projectID: number;
    projectName: string;
    projectDescription?: string | null;
    markDown?: string | null;
    file?: Uint8Array | null;
    image?: Uint8Array | null;
  },
) {
  const { file = null, image = null, ...fields } = project;
  return withContent(h, { file, image }, (content) =>
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

/** A database failure a test stages: rows of `table` that match `when` refuse `write` with `message`. */
export interface Refusal {
  /** The trigger's and its function's name (the function lives in the table's schema). */
  name: string;
  table: string;
  write: "insert" | "update" | "delete";
  /** The SQL condition on `new` (insert, update) or `old` (update, delete). */
  when: string;
  message: string;
}

/** Runs `work` while the database refuses a write (a trigger), dropped again afterwards. */
export async function whileRefusing<T>(h: Harness, refusal: Refusal, work: () => Promise<T>): Promise<T> {
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

/** Events in the projects outbox, and those the test consumer received (service-kit's serviceEvents). */
export const { outboxPayloads, receivedEvent } = serviceEvents(PROJECTS_SCHEMA);
