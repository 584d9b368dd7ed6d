import { isAppError, ProjectsEvents, ProjectsRpc, StorageEvents } from "@fundraise/protocol";
import { CONSUMER } from "@fundraise/storage/src/content/content.service.ts";
import { outboxPayloads as storageOutbox } from "@fundraise/storage/src/test/harness.ts";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addProject,
  contentSettled,
  expectAppError,
  type Harness,
  isPinned,
  isRecorded,
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
// The content's effects come after the write, from its events: storage records and unpins what the
// projects service's committed events say, each once (the tests wait for that, conditions not times).
const HELD = 4242;
let h: Harness;
let holder: pg.Client;

beforeAll(async () => {
  h = await startHarness("broker_loss");
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
const pinRowsOf = async (fileHash: string) =>
  (
    await h.sql.query(`select unpinned_at, unpin_reason from storage.pin where file_hash = $1 order by id`, [
      fileHash,
    ])
  ).rows as { unpinned_at: Date | null; unpin_reason: string | null }[];
const eventsOf = async <E extends { fileHash: string }>(events: Promise<E[]>, fileHash: string) =>
  (await events).filter((e) => e.fileHash === fileHash);
const readContent = (fileHash: string) => readWhitepaper(h.ipfsUrl, fileHash);

describe("the broker lost in the middle of Add", () => {
  it("while the projects service commits it: the answer is lost; a retry answers the same project; its content taken once", async () => {
    const { caller } = await seed(h);
    const projectName = uniqueProjectName("Lost");
    const file = uniqueBytes(311);
    const { error } = await loseBrokerDuring("projects.project", "insert", () =>
      addProject(h, caller, { projectName, file }),
    );
    expect(error, "the answer cannot come back").toMatchObject({ kind: "unavailable" });

    // The client sends the same Add again: the project it made is the answer, not a second one.
    const added = await onceReconnected(() => addProject(h, caller, { projectName, file }));
    expect(await projectsNamed(projectName)).toEqual([{ id: added.projectID, file_hash: added.fileHash }]);
    const taken = await eventsOf(outboxPayloads(h.sql, ProjectsEvents.contentTaken), added.fileHash);
    expect(taken.map((e) => e.projectId)).toEqual([added.projectID]);
    await contentSettled(h);
    expect(await pinRowsOf(added.fileHash)).toEqual([{ unpinned_at: null, unpin_reason: null }]);
    expect(await isPinned(h, added.fileHash)).toBe(true);
    expect(Buffer.compare(await readContent(added.fileHash), file)).toBe(0);
  });

  it("while storage records the content it took: recorded once, storage.content.pinned once", async () => {
    const { caller } = await seed(h);
    let added: Awaited<ReturnType<typeof addProject>> | undefined;
    // The Add answers; storage's handling of its content.taken is what waits and loses the broker.
    const { error } = await loseBrokerDuring("storage.pin", "insert", async () => {
      added = await addProject(h, caller, { file: uniqueBytes(312) });
    });
    expect(error).toBeUndefined();
    const { fileHash } = added!;
    // Committed before its acknowledgement was lost: the delivery comes again and is handled as a duplicate.
    await expect
      .poll(
        async () => {
          const { ready, unacknowledged } = await h.vhost.queueCounts(
            `${CONSUMER}.${ProjectsEvents.contentTaken.name}`,
          );
          return ready + unacknowledged;
        },
        { timeout: 30_000, interval: 200 },
      )
      .toBe(0);
    expect(await pinRowsOf(fileHash)).toEqual([{ unpinned_at: null, unpin_reason: null }]);
    expect(await eventsOf(storageOutbox(h.sql, StorageEvents.pinned), fileHash)).toHaveLength(1);
    expect(await isPinned(h, fileHash)).toBe(true);
  });
});

describe("the broker lost in the middle of Update", () => {
  it("while the projects service commits the new file: it stands, the old content goes; a retry changes nothing more", async () => {
    const owner = await seed(h);
    const project = await addProject(h, owner.caller, { file: uniqueBytes(321) });
    await expect.poll(() => isRecorded(h, project.fileHash), { timeout: 15_000 }).toBe(true);
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
    // Its events were committed with it and published once the broker was back: the new content
    // recorded, the old one unpinned.
    await contentSettled(h);
    expect(await pinRowsOf(after.fileHash)).toEqual([{ unpinned_at: null, unpin_reason: null }]);
    expect(await isPinned(h, after.fileHash)).toBe(true);
    expect(Buffer.compare(await readContent(after.fileHash), newFile)).toBe(0);
    const replaced = `project:${project.projectID}:replaced`;
    expect(await pinRowsOf(project.fileHash)).toMatchObject([{ unpin_reason: replaced }]);
    expect(await isPinned(h, project.fileHash)).toBe(false);

    const again = await onceReconnected(update);
    expect(again.fileHash).toBe(after.fileHash);
    expect(await projectsNamed(`${project.projectName} v2`)).toHaveLength(1);
    await contentSettled(h);
    expect(await eventsOf(outboxPayloads(h.sql, ProjectsEvents.contentTaken), after.fileHash)).toHaveLength(
      1,
    );
    expect(
      await eventsOf(outboxPayloads(h.sql, ProjectsEvents.contentDropped), project.fileHash),
    ).toHaveLength(1);
    expect(await pinRowsOf(after.fileHash)).toHaveLength(1);
  });
});

describe("the broker lost in the middle of Delete", () => {
  it("while the projects service deletes: the project is gone once, its content goes; a retry finds nothing", async () => {
    const owner = await seed(h);
    const project = await addProject(h, owner.caller, { file: uniqueBytes(331) });
    await expect.poll(() => isRecorded(h, project.fileHash), { timeout: 15_000 }).toBe(true);
    const { error } = await loseBrokerDuring("projects.project", "delete", () =>
      h.client.call(ProjectsRpc.delete, { caller: owner.caller, id: project.projectID }),
    );
    expect(error).toMatchObject({ kind: "unavailable" });

    await expectAppError(
      onceReconnected(() => h.client.call(ProjectsRpc.get, { caller: owner.caller, id: project.projectID })),
      "not_found",
      "PROJECT_NOT_FOUND",
    );
    // The deletion's events were committed with it, once, and storage handled its drop once the broker
    // was back.
    await contentSettled(h);
    const deleted = `project:${project.projectID}:deleted`;
    expect(await pinRowsOf(project.fileHash)).toMatchObject([{ unpin_reason: deleted }]);
    expect(await isPinned(h, project.fileHash)).toBe(false);
    const deletedEvents = await outboxPayloads(h.sql, ProjectsEvents.deleted);
    expect(deletedEvents.filter((e) => e.projectId === project.projectID)).toHaveLength(1);
    expect(
      await eventsOf(outboxPayloads(h.sql, ProjectsEvents.contentDropped), project.fileHash),
    ).toHaveLength(1);
    await expectAppError(
      h.client.call(ProjectsRpc.delete, { caller: owner.caller, id: project.projectID }),
      "not_found",
      "PROJECT_NOT_FOUND",
    );
  });
});
