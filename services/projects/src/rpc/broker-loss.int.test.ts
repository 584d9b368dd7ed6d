import { isAppError, ProjectsEvents, ProjectsRpc } from "@fundraise/protocol";
import { agePin, nodePins } from "@fundraise/storage/src/test/harness.ts";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addProject,
  expectAppError,
  type Harness,
  isPinned,
  outboxPayloads,
  readWhitepaper,
  seed,
  startHarness,
  uniqueBytes,
  uniqueProjectName,
  updateProject,
} from "../test/harness.ts";

// The broker lost in the middle of Add, Update and Delete, under the real projects, storage and users
// services, Postgres and RabbitMQ (IPFS: OUR KUBO-RPC STAND-IN, packages/ipfs-node). Every connection of
// the test's vhost is closed (the services' and the test client's) while a service is inside its database
// transaction: a trigger makes that transaction wait on an advisory lock the test holds, the test closes
// the connections, then lets the transaction commit. Its answer has no way back; the services reconnect.
const HOUR = 3_600_000;
const HELD = 4242;
let h: Harness;
let holder: pg.Client;

beforeAll(async () => {
  h = await startHarness("broker_loss", {}, { storageEnv: { RECONCILE_INTERVAL_MS: "200" } });
  holder = new pg.Client({ connectionString: h.db.url });
  await holder.connect();
  await h.sql.query(`
    create function public.wait_for_test() returns trigger language plpgsql as $$
    begin perform pg_advisory_xact_lock(${HELD}); return coalesce(new, old); end $$`);
});
afterAll(async () => {
  await holder?.end();
  await h?.stop();
});

/**
 * Runs `call` with `table`'s `event` trigger waiting on the test's lock; once a transaction waits there,
 * closes every broker connection of the vhost and lets the transaction go on. Answers the call's outcome.
 */
async function loseBrokerDuring(
  table: string,
  event: "insert" | "update" | "delete",
  call: () => Promise<unknown>,
): Promise<{ error: unknown }> {
  await h.sql.query(
    `create trigger wait_for_test before ${event} on ${table} for each row execute function public.wait_for_test()`,
  );
  await holder.query("select pg_advisory_lock($1)", [HELD]);
  try {
    const outcome = call().then(
      () => ({ error: undefined }),
      (error: unknown) => ({ error }),
    );
    await expect
      .poll(
        async () =>
          (
            await h.sql.query(
              "select 1 from pg_locks where locktype = 'advisory' and objid = $1 and not granted",
              [HELD],
            )
          ).rowCount,
        { timeout: 10_000, interval: 20 },
      )
      .toBe(1);
    await h.vhost.dropConnections("test: broker lost mid-call");
    await holder.query("select pg_advisory_unlock($1)", [HELD]);
    return await outcome;
  } finally {
    await holder.query("select pg_advisory_unlock_all()");
    await h.sql.query(`drop trigger wait_for_test on ${table}`);
  }
}

/** Retries `work` while the bus says the broker or a service is away (the reconnection under way). */
async function onceReconnected<T>(work: () => Promise<T>): Promise<T> {
  const until = Date.now() + 15_000;
  for (;;) {
    try {
      return await work();
    } catch (error) {
      const away = isAppError(error) && (error.kind === "unavailable" || error.kind === "timeout");
      if (!away || Date.now() > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

const projectsNamed = async (name: string) =>
  (await h.sql.query(`select id, file_hash from projects.project where name = $1`, [name])).rows as {
    id: number;
    file_hash: string;
  }[];
const livePins = async (fileBytes: number) =>
  (
    await h.sql.query(
      `select file_hash, cid from storage.pin where file_bytes = $1 and unpinned_at is null`,
      [fileBytes],
    )
  ).rows as { file_hash: string; cid: string }[];
const readContent = (fileHash: string) => readWhitepaper(h.ipfsUrl, fileHash);

describe("the broker lost in the middle of Add", () => {
  it("while storage records the upload: no project, the content an orphan; retrying writes the project once", async () => {
    const { caller } = await seed(h);
    const projectName = uniqueProjectName("Lost");
    const file = uniqueBytes(311);
    const { error } = await loseBrokerDuring("storage.pin", "insert", () =>
      addProject(h, caller, { projectName, file }),
    );
    expect(error, "the answer cannot come back").toMatchObject({ kind: "unavailable" });
    // Storage committed its record; the projects service never heard of it, so it wrote nothing.
    expect(await projectsNamed(projectName)).toEqual([]);
    const [recorded] = await livePins(311);
    expect(recorded).toBeDefined();

    const added = await onceReconnected(() => addProject(h, caller, { projectName, file }));
    expect(await projectsNamed(projectName)).toEqual([{ id: added.projectID, file_hash: added.fileHash }]);
    // The same bytes: the recorded upload serves the retry, nothing is pinned twice.
    expect(await livePins(311)).toEqual([recorded]);
    expect(Buffer.compare(await readContent(added.fileHash), file)).toBe(0);
  });
});

describe("the broker lost in the middle of Update", () => {
  it("while the projects service commits the new file: it stands, the old content goes; a retry changes nothing more", async () => {
    const owner = await seed(h);
    const project = await addProject(h, owner.caller, { file: uniqueBytes(321) });
    const newFile = uniqueBytes(322);
    const update = () =>
      updateProject(h, owner.caller, {
        projectID: project.projectID,
        projectName: `${project.projectName} v2`,
        projectDescription: "changed",
        file: newFile,
      });
    const { error } = await loseBrokerDuring("projects.project", "update", update);
    expect(error).toMatchObject({ kind: "unavailable" });

    const after = await onceReconnected(() =>
      h.client.call(ProjectsRpc.get, { caller: owner.caller, id: project.projectID }),
    );
    expect(after.projectName).toBe(`${project.projectName} v2`);
    expect(after.fileHash).not.toBe(project.fileHash);
    expect(await isPinned(h, after.fileHash)).toBe(true);
    expect(Buffer.compare(await readContent(after.fileHash), newFile)).toBe(0);
    // The old content was let go after the commit, or is left to the reconciliation if that call was lost.
    await agePin(h.sql, project.fileHash, HOUR);
    await expect.poll(() => isPinned(h, project.fileHash), { timeout: 10_000 }).toBe(false);

    const again = await onceReconnected(update);
    expect(again.fileHash).toBe(after.fileHash);
    expect(await projectsNamed(`${project.projectName} v2`)).toHaveLength(1);
    expect(await livePins(322)).toHaveLength(1);
  });
});

describe("the broker lost in the middle of Delete", () => {
  it("while the projects service deletes: the project is gone once, its content goes; a retry finds nothing", async () => {
    const owner = await seed(h);
    const project = await addProject(h, owner.caller, { file: uniqueBytes(331) });
    const [pin] = await livePins(331);
    const { error } = await loseBrokerDuring("projects.project", "delete", () =>
      h.client.call(ProjectsRpc.delete, { caller: owner.caller, id: project.projectID }),
    );
    expect(error).toMatchObject({ kind: "unavailable" });

    await expectAppError(
      onceReconnected(() => h.client.call(ProjectsRpc.get, { caller: owner.caller, id: project.projectID })),
      "not_found",
      "PROJECT_NOT_FOUND",
    );
    await agePin(h.sql, project.fileHash, HOUR);
    await expect.poll(() => isPinned(h, project.fileHash), { timeout: 10_000 }).toBe(false);
    expect(await nodePins(h.node.url, pin!.cid)).toBe(false);
    // The deletion's event was committed with it and is published once the broker is back, once.
    await expect
      .poll(
        async () =>
          (await outboxPayloads(h.sql, ProjectsEvents.deleted)).filter(
            (e) => e.projectId === project.projectID,
          ).length,
      )
      .toBe(1);
    await expectAppError(
      h.client.call(ProjectsRpc.delete, { caller: owner.caller, id: project.projectID }),
      "not_found",
      "PROJECT_NOT_FOUND",
    );
  });
});
