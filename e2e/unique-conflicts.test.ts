import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Answer, createClient } from "./client.ts";
import {
  cidOfFileHash,
  createPeople,
  expectEnvelope,
  hexOf,
  identityOf,
  isPinned,
  newContent,
  type ProjectDto,
  type User,
} from "./projects-kit.ts";
import { type SharedSystem, sharedSystem } from "./shared.ts";

// rules.md §8.12: concurrent writes of the same unique thing (name, file, membership, invitation) give
// exactly one success and 409 for the rest, never 500; a rating is an upsert (both succeed, one row).
// On the shared running system: six proposers, each calling from an address of its own (the gateway's
// per-IP limit is 600 a minute), send their writes at the same moment. Every project made here is deleted
// again (the review queue is shared with the other files).

const AT_ONCE = 6;
const FILE_ROUNDS = 200;
/**
 * Each file round: six uploads and their answers, a read, a deletion. The test's limit grows with its
 * rounds (2 s each) instead of the 180 s every e2e test has: 200 rounds must not need a fast machine.
 */
const FILE_ROUND_BUDGET_MS = 2_000;
const NAME_ROUNDS = 10;
const UPDATE_ROUNDS = 10;

let sys: SharedSystem;
let db: pg.Pool;
/** One client (one calling address) per proposer, one for the Admin and the Viewer. */
const clients = Array.from({ length: AT_ONCE + 1 }, () => createClient(() => sys));
const staff = clients[AT_ONCE] as ReturnType<typeof createClient>;
let proposers: User[];
let admin: User;
let viewer: User;
let invitee: User;
/** Every project created here and not deleted yet. */
const created = new Set<number>();

beforeAll(async () => {
  sys = await sharedSystem();
  db = new pg.Pool({ connectionString: sys.databaseUrl, max: 2 });
  // Chain roles are sent by this file's one chain account: one `people` sets them, one at a time.
  const people = createPeople(() => sys, staff);
  [admin, viewer, invitee, ...proposers] = await Promise.all([
    people.newUser("Admin"),
    people.newUser("Viewer"),
    createPeople(() => sys, clients[0] as ReturnType<typeof createClient>).newUser("Base"),
    ...clients.slice(0, AT_ONCE).map((client) => createPeople(() => sys, client).newUser("Base")),
  ]);
});

afterAll(async () => {
  // What this file proposed does not stay in the shared system's review queue (whatever a failed test left).
  if (admin) await Promise.all([...created].map((id) => call(admin, "DELETE", `/Project/Delete/${id}`)));
  await db?.end();
});

/** A call as `user`, from the address of its own client (the proposers') or the staff's. */
function call(user: User, method: string, path: string, body?: unknown): Promise<Answer> {
  const slot = proposers?.indexOf(user) ?? -1;
  const client = slot >= 0 ? clients[slot] : staff;
  return (client as ReturnType<typeof createClient>).api(method, path, {
    token: user.token,
    ...(body === undefined ? {} : { body }),
  });
}

const dto = (res: Answer) => res.body.data as ProjectDto;
const unique = (label: string) => `${label} ${Math.random().toString(36).slice(2, 10)}`;

async function remove(id: number) {
  const res = await call(admin, "DELETE", `/Project/Delete/${id}`);
  expectEnvelope(res, 200, `delete ${id}`);
  created.delete(id);
}

/** Each answer's status, in order, and the one that succeeded (if exactly one did). */
function outcome(answers: Answer[], success: number) {
  const statuses = answers.map((a) => a.status);
  const winners = statuses.flatMap((s, i) => (s === success ? [i] : []));
  return { statuses, winner: winners.length === 1 ? (winners[0] as number) : undefined };
}

/** Every answer but the winner's: 409 in the envelope, with a message naming `what`. */
function expectConflicts(answers: Answer[], winner: number, what: RegExp, label: string) {
  for (const [i, res] of answers.entries()) {
    if (i === winner) continue;
    expectEnvelope(res, 409, label);
    expect(res.body.message, label).toMatch(what);
  }
}

/** One project per proposer, made one at a time (a name and a file of its own). */
async function projectPerProposer(label: string): Promise<ProjectDto[]> {
  const projects: ProjectDto[] = [];
  for (const proposer of proposers) {
    const content = newContent(label, false);
    const add = await call(proposer, "POST", "/Project/Add", {
      projectName: unique(label),
      fileHex: hexOf(content.file),
    });
    expectEnvelope(add, 201, `${label}: Add`);
    created.add(dto(add).projectID);
    projects.push(dto(add));
  }
  return projects;
}

describe("Adds of the same file at once", () => {
  it(
    `${AT_ONCE} at once (other names), ${FILE_ROUNDS} rounds: one 201 and 409 for the rest, the winner's content kept`,
    async () => {
      const bad: string[] = [];
      // A round in which Postgres refused a connection (503 "The database is unavailable": other systems on
      // this machine share its 100 connections) tells nothing about the race: it is run again, for at most a
      // tenth of the rounds. Any other answer than 201 and 409 fails the round.
      const refused: string[] = [];
      // The last round's winner is deleted while the next round runs (a proposer has at most two waiting).
      let deleting: Promise<unknown> = Promise.resolve();
      for (let round = 0; round < FILE_ROUNDS; round++) {
        // A few hundred bytes, whitepaper and image: the same directory, so the same fileHash, for all six.
        const content = newContent(`file race ${round}`);
        const fileHex = hexOf(content.file);
        const imageUrl = hexOf(content.image as Buffer);
        const answers = await Promise.all(
          proposers.map((proposer, i) =>
            call(proposer, "POST", "/Project/Add", {
              projectName: unique(`file race ${round}.${i}`),
              fileHex,
              imageUrl,
            }),
          ),
        );
        await deleting;
        const { statuses, winner } = outcome(answers, 201);
        for (const res of answers) if (res.status === 201) created.add(dto(res).projectID);
        const label = `round ${round}: ${statuses.join(" ")} ${answers.map((a) => a.body.message).join(" | ")}`;
        const others = answers.filter((a) => a.status !== 201 && a.status !== 409);
        const dbRefused = (a: Answer) =>
          a.status === 503 && a.body.message === "The database is unavailable.";
        if (winner === undefined || others.length > 0) {
          if (others.length > 0 && others.every(dbRefused) && refused.length < FILE_ROUNDS / 10) {
            refused.push(label);
            round--;
          } else bad.push(label);
        } else expectConflicts(answers, winner, /same file/, label);
        if (winner !== undefined) {
          // Whatever the others got, they took nothing from the winner: pinned, and read back as its file.
          const won = dto(answers[winner] as Answer);
          const { cid, fileHash } = await identityOf(content);
          expect(won.fileHash, label).toBe(fileHash);
          expect(await isPinned(sys.ipfsUrl as string, cid), label).toBe(true);
          const own = await call(proposers[winner] as User, "GET", "/Project/GetAllPermissioned/true");
          expectEnvelope(own, 200, label);
          expect(
            (own.body.data as ProjectDto[]).map((p) => [p.projectID, p.fileHex]),
            label,
          ).toEqual([[won.projectID, fileHex]]);
        }
        deleting = Promise.all(answers.filter((a) => a.status === 201).map((a) => remove(dto(a).projectID)));
        deleting.catch(() => undefined); // awaited in the next round
      }
      await deleting;
      expect(bad, `${bad.length} of ${FILE_ROUNDS} rounds (${refused.length} run again: ${refused})`).toEqual(
        [],
      );
    },
    FILE_ROUNDS * FILE_ROUND_BUDGET_MS,
  );
});

describe("Adds of the same name at once", () => {
  it(`${AT_ONCE} at once (other files), ${NAME_ROUNDS} rounds: one 201 and 409 for the rest, nothing of theirs pinned`, async () => {
    for (let round = 0; round < NAME_ROUNDS; round++) {
      const label = `name round ${round}`;
      const name = unique("name race");
      const contents = proposers.map((_, i) => newContent(`name race ${round}.${i}`, false));
      const answers = await Promise.all(
        proposers.map((proposer, i) =>
          call(proposer, "POST", "/Project/Add", {
            // Any case: names are unique case-insensitively.
            projectName: i % 2 === 0 ? name : name.toUpperCase(),
            fileHex: hexOf(contents[i]?.file as Buffer),
          }),
        ),
      );
      for (const res of answers) if (res.status === 201) created.add(dto(res).projectID);
      const { statuses, winner } = outcome(answers, 201);
      expect(winner, `${label}: ${statuses.join(" ")}`).toBeDefined();
      expectConflicts(answers, winner as number, /name already exists/, label);
      // The winner's content is pinned; the refused ones' is released by the gateway after each answer.
      for (const [i, content] of contents.entries()) {
        const { cid } = await identityOf(content);
        const pinned = () => isPinned(sys.ipfsUrl as string, cid);
        if (i === winner) expect(await pinned(), `${label}, Add ${i}`).toBe(true);
        else await expect.poll(pinned, { message: `${label}, Add ${i}`, timeout: 30_000 }).toBe(false);
      }
      await remove(dto(answers[winner as number] as Answer).projectID);
    }
  });
});

describe("Updates, invitations, replies and ratings of one thing at once", () => {
  let projects: ProjectDto[];
  beforeAll(async () => {
    projects = await projectPerProposer("team");
  });
  afterAll(async () => {
    await Promise.all(projects.map((p) => (created.has(p.projectID) ? remove(p.projectID) : undefined)));
  });

  it(`six projects renamed to one name at once, ${UPDATE_ROUNDS} rounds: one 200 and 409 for the rest`, async () => {
    for (let round = 0; round < UPDATE_ROUNDS; round++) {
      const label = `rename round ${round}`;
      const name = unique("rename race");
      const answers = await Promise.all(
        projects.map((project, i) =>
          call(proposers[i] as User, "PUT", "/Project/Update", {
            projectID: project.projectID,
            projectName: name,
          }),
        ),
      );
      const { statuses, winner } = outcome(answers, 200);
      expect(winner, `${label}: ${statuses.join(" ")}`).toBeDefined();
      expectConflicts(answers, winner as number, /name already exists/, label);
      const { rows } = await db.query(`select id from projects.project where lower(name) = lower($1)`, [
        name,
      ]);
      expect(rows, label).toEqual([{ id: projects[winner as number]?.projectID }]);
    }
  });

  it(`six projects given one new file at once, ${UPDATE_ROUNDS} rounds: one 200, 409 for the rest, each keeps its content`, async () => {
    for (let round = 0; round < UPDATE_ROUNDS; round++) {
      const label = `file update round ${round}`;
      const before = await Promise.all(
        projects.map(async (p, i) => {
          const res = await call(proposers[i] as User, "GET", `/Project/Get/${p.projectID}`);
          expectEnvelope(res, 200, label);
          return dto(res).fileHash;
        }),
      );
      const content = newContent(`file update race ${round}`);
      const answers = await Promise.all(
        projects.map((project, i) =>
          call(proposers[i] as User, "PUT", "/Project/Update", {
            projectID: project.projectID,
            projectName: unique(`file update ${round}.${i}`),
            fileHex: hexOf(content.file),
            imageUrl: hexOf(content.image as Buffer),
          }),
        ),
      );
      const { statuses, winner } = outcome(answers, 200);
      expect(winner, `${label}: ${statuses.join(" ")}`).toBeDefined();
      expectConflicts(answers, winner as number, /same file/, label);
      const { cid, fileHash } = await identityOf(content);
      expect(dto(answers[winner as number] as Answer).fileHash, label).toBe(fileHash);
      expect(await isPinned(sys.ipfsUrl as string, cid), label).toBe(true);
      // The losers keep their own content, pinned (their refused upload was the winner's: released, it is
      // answered held). The winner's old content is let go by its commit and unpinned by storage.
      for (const [i, old] of before.entries()) {
        const pinned = () => isPinned(sys.ipfsUrl as string, cidOfFileHash(old));
        const what = `${label}, project ${i}${i === winner ? " (the winner's old file)" : ""}`;
        if (i === winner) await expect.poll(pinned, { message: what, timeout: 30_000 }).toBe(false);
        else expect(await pinned(), what).toBe(true);
      }
    }
  });

  it("one user invited to a project six times at once: one 201 and 409 for the rest; six replies at once: one 200", async () => {
    for (const [i, project] of projects.entries()) {
      const label = `invitation to project ${i}`;
      const owner = proposers[i] as User;
      const invites = await Promise.all(
        Array.from({ length: AT_ONCE }, () =>
          call(owner, "POST", "/User/Invite", {
            projectID: project.projectID,
            username: invitee.username,
            role: "Editor",
          }),
        ),
      );
      const invited = outcome(invites, 201);
      expect(invited.winner, `${label}: ${invited.statuses.join(" ")}`).toBeDefined();
      expectConflicts(invites, invited.winner as number, /already a member of the project or invited/, label);
      const replies = await Promise.all(
        Array.from({ length: AT_ONCE }, () =>
          call(invitee, "PUT", "/User/InvitationReply", { projectID: project.projectID, isAccepted: true }),
        ),
      );
      // Accepted once; the others find no pending invitation any more (as a reply sent afterwards would).
      const replied = outcome(replies, 200);
      expect(replied.winner, `${label}: replies ${replied.statuses.join(" ")}`).toBeDefined();
      for (const [j, res] of replies.entries()) if (j !== replied.winner) expectEnvelope(res, 404, label);
      const { rows } = await db.query(
        `select role, is_accepted from projects.permission where project_id = $1 and user_id = $2`,
        [project.projectID, invitee.id],
      );
      expect(rows, label).toEqual([{ role: "Editor", is_accepted: true }]);
    }
    const own = await call(invitee, "GET", "/Project/GetAllPermissioned/false");
    expect((own.body.data as ProjectDto[]).map((p) => p.projectID).sort()).toEqual(
      projects.map((p) => p.projectID).sort(),
    );
  });

  it("one user's ratings of a project sent six times at once: all 200, one rating row, the mean of one", async () => {
    for (const [i, project] of projects.entries()) {
      const label = `ratings of project ${i}`;
      const values = [1, 5, 1, 5, 1, 5];
      const rates = await Promise.all(
        values.map((value) => call(admin, "PUT", `/Project/Rate/${project.projectID}/${value}`)),
      );
      for (const res of rates) expectEnvelope(res, 200, label);
      const { rows } = await db.query(
        `select value from projects.rating where project_id = $1 and user_id = $2`,
        [project.projectID, admin.id],
      );
      expect(rows, label).toHaveLength(1);
      const kept = Number(rows[0]?.value);
      expect([1, 5], label).toContain(kept);
      // A second user's rating: the mean of two ratings, the Admin's counted once.
      const second = await call(viewer, "PUT", `/Project/Rate/${project.projectID}/0`);
      expectEnvelope(second, 200, label);
      expect(dto(second).rating, label).toBe(kept / 2);
    }
  });
});
