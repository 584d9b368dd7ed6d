import { ErrorCode, isAppError, ProjectsRpc } from "@fundraise/protocol";
import { ORPHAN_REASON } from "@fundraise/storage/src/content/reconcile.ts";
import { agePin, nodePins, storeContent } from "@fundraise/storage/src/test/harness.ts";
import { describe, expect, it } from "vitest";
import {
  addProject,
  expectAppError,
  isPinned,
  readWhitepaper,
  seed,
  uniqueBytes,
  uniqueProjectName,
  updateProject,
  useHarness,
  whileRefusing,
} from "../test/harness.ts";

// Faults under the real projects, storage and users services, real Postgres and RabbitMQ; IPFS is OUR
// KUBO-RPC STAND-IN (packages/ipfs-node, not Kubo), stopped and restarted under the running services.
// The storage service reconciles orphans every 200 ms here (grace: the default 15 minutes); a test makes
// content old by moving its pin's upload time back.
const HOUR = 3_600_000;
const h = useHarness("faults", {}, { storageEnv: { RECONCILE_INTERVAL_MS: "200" } });

/** The storage inventory's rows of this content, oldest first. */
async function pinsOf(fileHash: string) {
  const { rows } = await h.sql.query<{ cid: string; unpinned_at: Date | null; unpin_reason: string | null }>(
    `select cid, unpinned_at, unpin_reason from storage.pin where file_hash = $1 order by id`,
    [fileHash],
  );
  return rows;
}

async function pinsOfBytes(size: number) {
  const { rows } = await h.sql.query<{ file_hash: string; cid: string; unpinned_at: Date | null }>(
    `select file_hash, cid, unpinned_at from storage.pin where file_bytes = $1 order by id`,
    [size],
  );
  return rows;
}

async function projectNamed(name: string) {
  const { rows } = await h.sql.query(`select id, file_hash from projects.project where name = $1`, [name]);
  return rows as { id: number; file_hash: string }[];
}

const readContent = (fileHash: string) => readWhitepaper(h.ipfsUrl, fileHash);

describe("a crash after the upload (the projects service died after storage answered, before its commit)", () => {
  it("the reconciliation unpins the orphan; a project's content and an orphan inside the grace period stay", async () => {
    const { caller } = await seed(h);
    const projectFile = uniqueBytes(120);
    const project = await addProject(h, caller, { file: projectFile });
    // What the dead projects service had uploaded; no project holds it.
    const orphan = await storeContent(h, {
      file: uniqueBytes(121),
      image: null,
      reason: "project:add",
    });
    const young = await storeContent(h, {
      file: uniqueBytes(122),
      image: null,
      reason: "project:add",
    });
    await agePin(h.sql, project.fileHash, HOUR);
    await agePin(h.sql, orphan.fileHash, HOUR);

    await expect
      .poll(async () => (await pinsOf(orphan.fileHash))[0]?.unpin_reason ?? null, { timeout: 5000 })
      .toBe(ORPHAN_REASON);
    expect((await pinsOf(orphan.fileHash))[0]?.unpinned_at).toBeInstanceOf(Date);
    expect(await nodePins(h.node.url, orphan.cid)).toBe(false);
    // The round that removed the orphan saw the project's old content and the young orphan too.
    const [projectPin] = await pinsOf(project.fileHash);
    expect(projectPin?.unpinned_at).toBeNull();
    expect(await nodePins(h.node.url, projectPin!.cid)).toBe(true);
    expect(Buffer.compare(await readContent(project.fileHash), projectFile)).toBe(0);
    expect(await isPinned(h, young.fileHash)).toBe(true);
    expect(await nodePins(h.node.url, young.cid)).toBe(true);
  });
});

describe("IPFS stopped mid-run", () => {
  it("Add answers 503 IPFS_UNAVAILABLE and writes nothing; once IPFS is back the same Add succeeds", async () => {
    const { caller } = await seed(h);
    const projectName = uniqueProjectName("Offline");
    const file = uniqueBytes(131);
    await h.stopIpfs();
    try {
      const started = performance.now();
      await expectAppError(
        addProject(h, caller, { projectName, file }),
        "unavailable",
        ErrorCode.IPFS_UNAVAILABLE,
      );
      expect(performance.now() - started).toBeLessThan(5000);
      expect(await projectNamed(projectName)).toEqual([]);
      expect(await pinsOfBytes(131)).toEqual([]);
    } finally {
      await h.restartIpfs();
    }
    const added = await addProject(h, caller, { projectName, file });
    expect(await projectNamed(projectName)).toEqual([{ id: added.projectID, file_hash: added.fileHash }]);
    expect(await isPinned(h, added.fileHash)).toBe(true);
    expect(Buffer.compare(await readContent(added.fileHash), file)).toBe(0);
  });

  it("Update with a new file answers 503 and the project keeps its old content", async () => {
    const owner = await seed(h);
    const oldFile = uniqueBytes(141);
    const project = await addProject(h, owner.caller, { file: oldFile });
    await h.stopIpfs();
    try {
      await expectAppError(
        updateProject(h, owner.caller, {
          projectID: project.projectID,
          projectName: `${project.projectName} v2`,
          projectDescription: "changed",
          file: uniqueBytes(142),
        }),
        "unavailable",
        ErrorCode.IPFS_UNAVAILABLE,
      );
    } finally {
      await h.restartIpfs();
    }
    const after = await h.client.call(ProjectsRpc.get, { caller: owner.caller, id: project.projectID });
    expect(after).toMatchObject({
      projectName: project.projectName,
      projectDescription: project.projectDescription,
      fileHash: project.fileHash,
    });
    expect(await pinsOfBytes(142)).toEqual([]);
    expect(await isPinned(h, project.fileHash)).toBe(true);
    expect(Buffer.compare(await readContent(project.fileHash), oldFile)).toBe(0);
  });
});

describe("the database failing in the middle of Add", () => {
  it("the insert fails after the upload: an error answer, no project, the content unpinned; a retry succeeds", async () => {
    const { caller } = await seed(h);
    const projectName = uniqueProjectName("Crash");
    const file = uniqueBytes(151);
    // The projects service's insert fails inside its Add transaction, after the upload answered.
    const refusal = {
      name: "crash",
      table: "projects.project",
      write: "insert",
      when: "new.name like 'Crash %'",
      message: "database failure in the middle of Add",
    } as const;
    await whileRefusing(h, refusal, async () => {
      const error = await addProject(h, caller, { projectName, file }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isAppError(error), `not an error envelope: ${String(error)}`).toBe(true);
      expect(error).toMatchObject({ kind: "internal", code: ErrorCode.INTERNAL });
      expect(await projectNamed(projectName)).toEqual([]);
      const pins = await pinsOfBytes(151);
      expect(pins).toHaveLength(1);
      expect(pins[0]?.unpinned_at).toBeInstanceOf(Date);
      expect(await nodePins(h.node.url, pins[0]!.cid)).toBe(false);
    });
    // Retrying is safe: the same bytes are uploaded and pinned again, and the project is written once.
    const added = await addProject(h, caller, { projectName, file });
    expect(await projectNamed(projectName)).toEqual([{ id: added.projectID, file_hash: added.fileHash }]);
    expect((await pinsOf(added.fileHash)).map((p) => p.unpinned_at === null)).toEqual([false, true]);
    expect(await nodePins(h.node.url, (await pinsOf(added.fileHash))[1]!.cid)).toBe(true);
    expect(Buffer.compare(await readContent(added.fileHash), file)).toBe(0);
  });
});

describe("the database failing in the middle of Delete", () => {
  it("a failure before the commit: an error answer, the project and its content intact; a retry deletes it", async () => {
    const owner = await seed(h);
    const file = uniqueBytes(161);
    const project = await addProject(h, owner.caller, { file });
    const refusal = {
      name: "no_delete",
      table: "projects.project",
      write: "delete",
      when: `old.id = ${project.projectID}`,
      message: "database failure in the middle of Delete",
    } as const;
    await whileRefusing(h, refusal, async () => {
      await expect(
        h.client.call(ProjectsRpc.delete, { caller: owner.caller, id: project.projectID }),
      ).rejects.toMatchObject({ kind: "internal" });
      const kept = await h.client.call(ProjectsRpc.get, { caller: owner.caller, id: project.projectID });
      expect(kept.fileHash).toBe(project.fileHash);
      expect(await isPinned(h, project.fileHash)).toBe(true);
      expect(Buffer.compare(await readContent(project.fileHash), file)).toBe(0);
    });
    await h.client.call(ProjectsRpc.delete, { caller: owner.caller, id: project.projectID });
    expect(await isPinned(h, project.fileHash)).toBe(false);
  });

  it("a failure after the row is gone: no project is left without content; the orphan goes with the reconciliation", async () => {
    const owner = await seed(h);
    const project = await addProject(h, owner.caller, { file: uniqueBytes(171) });
    // The storage database refuses to record the removal: the content cannot be unpinned now.
    const refusal = {
      name: "no_unpin",
      table: "storage.pin",
      write: "update",
      when: `old.file_hash = '${project.fileHash}'`,
      message: "database failure in the storage service",
    } as const;
    await whileRefusing(h, refusal, async () => {
      // The project's row is deleted and committed; the removal of its content fails after that.
      await h.client.call(ProjectsRpc.delete, { caller: owner.caller, id: project.projectID });
      await expectAppError(
        h.client.call(ProjectsRpc.get, { caller: owner.caller, id: project.projectID }),
        "not_found",
        "PROJECT_NOT_FOUND",
      );
      expect(await isPinned(h, project.fileHash)).toBe(true);
    });
    // Once the grace period is over, the reconciliation removes what no project holds any more.
    await agePin(h.sql, project.fileHash, HOUR);
    await expect
      .poll(async () => (await pinsOf(project.fileHash))[0]?.unpin_reason ?? null, { timeout: 5000 })
      .toBe(ORPHAN_REASON);
    expect(await nodePins(h.node.url, (await pinsOf(project.fileHash))[0]!.cid)).toBe(false);
  });
});
