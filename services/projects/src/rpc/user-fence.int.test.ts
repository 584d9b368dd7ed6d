import { testMessageContext } from "@fundraise/bus/testing";
import { ProjectsRpc, UsersEvents, UsersRpc } from "@fundraise/protocol";
import { createOrm, silentLogger } from "@fundraise/service-kit";
import { describe, expect, it } from "vitest";
import { migrations } from "../db/migrations/index.ts";
import { Permission, Project, Rating } from "../projects/project.entity.ts";
import { createProjectRepository, PROJECTS_SCHEMA } from "../projects/project.repository.ts";
import { createUserFenceService } from "../projects/user-fence.service.ts";
import { addProject, expectAppError, seed, setReview, useHarness } from "../test/harness.ts";

// A user's deletion against that user's writes, with the REAL users and projects services: the users
// service fences the user here inside its deleting transaction (docs/adr/0015-no-orphaned-projects.md).
const h = useHarness("fence");
/**
 * The racing tests' rounds: each seeds a user (and a team), then races two calls. 30 rounds took 6.5 s on a
 * loaded 2-core machine; their limit grows with the rounds (2 s each), not the 30 s every test has.
 */
const ROUNDS = 30;
const ROUND_BUDGET_MS = 2_000;

type Seeded = Awaited<ReturnType<typeof seed>>;

const exists = async (userId: number) =>
  (await h.sql.query(`select 1 from users."user" where id = $1`, [userId])).rows.length === 1;

/** Every project has exactly one accepted Owner, and no permission or rating names a user that is gone. */
async function invariants() {
  const { rows } = await h.sql.query(`
    select
      (select count(*) from projects.project p where (select count(*) from projects.permission m
         where m.project_id = p.id and m.role = 'Owner' and m.is_accepted) <> 1)::int as ownerless,
      (select count(*) from projects.permission m where not exists
         (select 1 from users."user" u where u.id = m.user_id))::int as orphan_permissions,
      (select count(*) from projects.rating r where not exists
         (select 1 from users."user" u where u.id = r.user_id))::int as orphan_ratings`);
  return rows[0];
}

async function teamWith(member: Seeded) {
  const owner = await seed(h);
  const project = await addProject(h, owner.caller);
  await h.client.call(ProjectsRpc.invite, {
    caller: owner.caller,
    request: { projectID: project.projectID, username: member.user.username, role: "Co-Owner" },
  });
  await h.client.call(ProjectsRpc.reply, {
    caller: member.caller,
    request: { projectID: project.projectID, isAccepted: true },
  });
  return { owner, id: project.projectID };
}

describe("the fence", () => {
  it("an Owner's deletion is refused by the projects service (409); once the project is gone it succeeds", async () => {
    const owner = await seed(h);
    const project = await addProject(h, owner.caller);
    await expectAppError(
      h.client.call(UsersRpc.deleteSelf, { caller: owner.caller }),
      "conflict",
      "USER_OWNS_PROJECT",
    );
    expect(await exists(owner.user.id)).toBe(true);
    // Nothing stays fenced: the owner still writes.
    await h.client.call(ProjectsRpc.updateMarkdown, {
      caller: owner.caller,
      id: project.projectID,
      markDown: "x",
    });
    await h.client.call(ProjectsRpc.delete, { caller: owner.caller, id: project.projectID });
    await h.client.call(UsersRpc.deleteSelf, { caller: owner.caller });
    expect(await exists(owner.user.id)).toBe(false);
  });

  it("a deleted user's writes that still reach the projects service are refused: 401 for them, 404 as an invitee", async () => {
    const member = await seed(h);
    const { owner, id } = await teamWith(member);
    await setReview(h, id, { viewerAccepted: true, status: "Approved" });
    const other = await teamWith(await seed(h));
    await h.client.call(UsersRpc.deleteSelf, { caller: member.caller });
    const gone = { kind: "unauthenticated", code: "TOKEN_REVOKED" } as const;
    await expectAppError(addProject(h, member.caller), gone.kind, gone.code);
    await expectAppError(
      h.client.call(ProjectsRpc.rate, { caller: member.caller, id, rating: 5 }),
      gone.kind,
      gone.code,
    );
    await expectAppError(
      h.client.call(ProjectsRpc.updateMarkdown, { caller: member.caller, id, markDown: "after" }),
      gone.kind,
      gone.code,
    );
    // Invited by someone else after the deletion: as if the user did not exist.
    await expectAppError(
      h.client.call(ProjectsRpc.invite, {
        caller: other.owner.caller,
        request: { projectID: other.id, username: member.user.username },
      }),
      "not_found",
      "USER_NOT_FOUND",
    );
    expect(owner).toBeDefined();
    await expect.poll(invariants, { timeout: 10_000 }).toEqual({
      ownerless: 0,
      orphan_permissions: 0,
      orphan_ratings: 0,
    });
  });

  it(
    `a deletion racing that user's Add, invitation or acceptance: one loses cleanly, nothing is orphaned (${ROUNDS} rounds)`,
    async () => {
      const outcomes = new Map<string, number>();
      for (let round = 0; round < ROUNDS; round++) {
        const user = await seed(h);
        const kind = round % 3;
        let write: () => Promise<unknown>;
        if (kind === 0) {
          write = () => addProject(h, user.caller);
        } else if (kind === 1) {
          // The user is an accepted Co-Owner inviting someone else.
          const { id } = await teamWith(user);
          const invitee = await seed(h);
          write = () =>
            h.client.call(ProjectsRpc.invite, {
              caller: user.caller,
              request: { projectID: id, username: invitee.user.username },
            });
        } else {
          // The user accepts an invitation.
          const owner = await seed(h);
          const project = await addProject(h, owner.caller);
          await h.client.call(ProjectsRpc.invite, {
            caller: owner.caller,
            request: { projectID: project.projectID, username: user.user.username },
          });
          write = () =>
            h.client.call(ProjectsRpc.reply, {
              caller: user.caller,
              request: { projectID: project.projectID, isAccepted: true },
            });
        }
        const [deletion, written] = await Promise.allSettled([
          h.client.call(UsersRpc.deleteSelf, { caller: user.caller }),
          write(),
        ]);
        const code = (r: PromiseSettledResult<unknown>) =>
          r.status === "fulfilled" ? "ok" : String((r.reason as { code?: string }).code);
        const key = `${["add", "invite", "accept"][kind]}:${code(deletion)}/${code(written)}`;
        outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
        // Never both for an Add (the Owner cannot be deleted); never a 500.
        if (kind === 0) expect(key, key).not.toBe("add:ok/ok");
        expect(key).not.toMatch(/INTERNAL/);
        if (written.status === "fulfilled" && kind === 0) {
          // The Add won: the user owns a project and stays.
          expect(await exists(user.user.id)).toBe(true);
          await h.client.call(ProjectsRpc.delete, {
            caller: user.caller,
            id: (written.value as { projectID: number }).projectID,
          });
        }
      }
      await expect.poll(invariants, { timeout: 10_000 }).toEqual({
        ownerless: 0,
        orphan_permissions: 0,
        orphan_ratings: 0,
      });
    },
    ROUNDS * ROUND_BUDGET_MS + 10_000,
  );

  it(
    `a member's write racing the clean-up of its deletion never deadlocks: the write takes the user's lock first (${ROUNDS} rounds)`,
    async () => {
      const outcomes = new Map<string, number>();
      for (let round = 0; round < ROUNDS; round++) {
        const member = await seed(h);
        const { id } = await teamWith(member);
        await setReview(h, id, { viewerAccepted: true, status: "Approved" });
        // A rating of the member: the clean-up locks the project's row to recompute the mean.
        await h.client.call(ProjectsRpc.rate, { caller: member.caller, id, rating: 4 });
        const [write] = await Promise.allSettled([
          h.client.call(ProjectsRpc.updateMarkdown, { caller: member.caller, id, markDown: `r${round}` }),
          h.client.publish(UsersEvents.deleted, { userId: member.user.id, address: member.user.address }),
        ]);
        const key = write.status === "fulfilled" ? "ok" : String((write.reason as { code?: string }).code);
        outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
      }
      // Written before the clean-up, or refused after it (the member is gone); never a deadlock's 503 or a 500.
      expect(
        [...outcomes.keys()].filter((k) => !["ok", "TOKEN_REVOKED", "PROJECT_NOT_MEMBER"].includes(k)),
      ).toEqual([]);
    },
    ROUNDS * ROUND_BUDGET_MS,
  );

  it("when a deletion answers, the user's memberships and ratings are already gone (ratings recomputed)", async () => {
    const member = await seed(h);
    const { owner, id } = await teamWith(member);
    await setReview(h, id, { viewerAccepted: true, status: "Approved" });
    await h.client.call(ProjectsRpc.rate, { caller: member.caller, id, rating: 5 });
    await h.client.call(ProjectsRpc.rate, { caller: owner.caller, id, rating: 1 });
    await h.client.call(UsersRpc.deleteSelf, { caller: member.caller });
    // No waiting for the deletion's event.
    const { rows } = await h.sql.query(
      `select (select count(*) from projects.permission where user_id = $1)::int as p,
              (select count(*) from projects.rating where user_id = $1)::int as r`,
      [member.user.id],
    );
    expect(rows[0]).toEqual({ p: 0, r: 0 });
    expect((await h.client.call(ProjectsRpc.get, { caller: null, id })).rating).toBe(1);
  });

  it("a deletion that gave up waiting for the fence leaves no fence behind, even when the fence's lock comes later", async () => {
    const member = await seed(h);
    const { id } = await teamWith(member);
    // A write of the member's holds its lock (shared) longer than the deletion waits.
    const holder = await h.sql.connect();
    try {
      await holder.query("begin");
      await holder.query("select pg_advisory_xact_lock_shared(hashtext('projects:user'), $1)", [
        member.user.id,
      ]);
      await expect(
        h.client.call(UsersRpc.deleteSelf, { caller: member.caller }, { timeoutMs: 1_500 }),
      ).rejects.toBeTruthy();
    } finally {
      await holder.query("commit");
      holder.release();
    }
    // The fence was never placed past the deletion's deadline (or was lifted under the lock): the member,
    // who still exists, writes. Deliberate: no fence may appear within half a second after the deletion
    // gave up (the fence's own wait ended before the deletion's deadline, so nothing is under way to poll).
    await new Promise((resolve) => setTimeout(resolve, 500));
    const fenced = await h.sql.query(`select 1 from projects.user_fence where user_id = $1`, [
      member.user.id,
    ]);
    expect(fenced.rows).toEqual([]);
    expect((await h.client.call(UsersRpc.get, { caller: member.caller })).id).toBe(member.user.id);
    expect(
      (await h.client.call(ProjectsRpc.updateMarkdown, { caller: member.caller, id, markDown: "still here" }))
        .markDown,
    ).toBe("still here");
  });

  it("a fence whose deletion never committed is lifted by the sweep; one whose event was lost removes the rows", async () => {
    const orm = await createOrm({
      url: h.db.url,
      schema: PROJECTS_SCHEMA,
      entities: [Project, Permission, Rating],
      migrations,
      log: silentLogger(),
    });
    try {
      const fences = createUserFenceService({
        projects: createProjectRepository(() => orm.em.fork()),
        users: { byIds: (ids, ctx) => h.client.call(UsersRpc.byIds, { ids }, ctx) },
        graceMs: 0,
      });
      // Alive: fenced by a deletion that failed and could not lift it (the users service crashed).
      const alive = await seed(h);
      const project = { projectID: (await teamWith(alive)).id };
      // Gone: deleted in the users service, its event lost; still a Co-Owner here.
      const gone = await seed(h);
      const team = await teamWith(gone);
      for (const user of [alive, gone]) {
        await h.client.call(ProjectsRpc.fenceUser, { userId: user.user.id });
      }
      await h.sql.query(`delete from users."user" where id = $1`, [gone.user.id]);
      await expectAppError(
        h.client.call(ProjectsRpc.updateMarkdown, {
          caller: alive.caller,
          id: project.projectID,
          markDown: "y",
        }),
        "unauthenticated",
        "TOKEN_REVOKED",
      );

      expect(await fences.sweep(testMessageContext())).toBe(2);
      expect(
        (
          await h.client.call(ProjectsRpc.updateMarkdown, {
            caller: alive.caller,
            id: project.projectID,
            markDown: "y",
          })
        ).markDown,
      ).toBe("y");
      const { rows } = await h.sql.query(
        `select count(*)::int as n from projects.permission where user_id = $1`,
        [gone.user.id],
      );
      expect(rows[0]?.n).toBe(0);
      expect(team.id).toBeGreaterThan(0);
      // Settled: nothing left for the next sweep.
      expect(await fences.sweep(testMessageContext())).toBe(0);
    } finally {
      await orm.close();
    }
  });
});
