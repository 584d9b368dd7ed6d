import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Answer, createClient } from "./client.ts";
import {
  createPeople,
  expectEnvelope,
  hexOf,
  newContent,
  type ProjectDto,
  type User,
} from "./projects-kit.ts";
import {
  brief,
  type Client,
  describeOrphans,
  gatewaysOf,
  inBatches,
  isEnvelope,
  type OrphanScope,
  offsetOf,
  openDatabase,
  orphanCount,
  orphans,
  type Raced,
  settledOrphans,
  signedInUsers,
  since,
  smallProjectOf,
  staggered,
  tally,
} from "./races-kit.ts";
import { type SharedSystem, sharedSystem } from "./shared.ts";

// "No orphaned projects" (rules.md §3.3, §8.3): a user's deletion racing that same user's Add, invite or
// invitation reply (or an owner inviting that user) never leaves a project without its accepted Owner, nor a
// membership, invitation or rating of a deleted user: one of the two requests loses cleanly (409, 401 or
// 404), never 5xx. Each round: a fresh user, the two requests through different gateway replicas, sent at
// once or a few ms apart in either order (`offsetOf`: 0 to 100 ms, so the moments around each answer and
// each event are tried too). Checked per round: every answer is the envelope with an allowed status (the
// pair an allowed one for Add), and, by "at once" (§8), a request that started after the deletion had
// answered 200 lost. Checked in the system's own database: no orphans (for Add the moment both answers are
// in; for the others once the events settled).
const ROUNDS = 200;
/** Rounds run at once (each on its own user; the shared projects see concurrent writes, as in life). */
const LANES = 6;

let sys: SharedSystem;
let A: string;
let B: string;
let db: pg.Pool;
const client = createClient(() => sys);
const people = createPeople(() => sys, client);
let admin: User;
/** The Owner of the projects the invitation races use; never deleted. */
let owner: User;
/** The projects this file proposed, deleted at the end (the shared review queue is small). */
const created = new Set<number>();

beforeAll(async () => {
  sys = await sharedSystem();
  [A, B] = gatewaysOf(sys);
  db = openDatabase(sys);
  [admin, owner] = await Promise.all([people.newUser("Admin"), people.newUser("Base")]);
});

afterAll(async () => {
  await db?.end();
  if (!admin) return;
  const cleaner = createClient(() => sys);
  await inBatches([...created], 8, (id) =>
    cleaner.api("DELETE", `/Project/Delete/${id}`, { token: admin.token }),
  );
});

/** One round's two answers and what was wrong with them (nothing: []). */
interface Round {
  round: number;
  label: string;
  first: Answer;
  second: Answer;
  /** Milliseconds from the deletion's answer to the other request's start (> 0: it started after). */
  startedAfterDeletion: number;
  problems: string[];
}

/**
 * "At once" (§8): a request that starts once the deletion has answered is judged by it. When the race's
 * other request started after the deletion's 200, the other must have lost (not 2xx): a problem else.
 */
function lateWinner(raced: Raced): string[] {
  if (raced.deletion.status !== 200 || raced.startedAfterDeletion <= 0 || raced.other.status >= 300)
    return [];
  return [
    `the other request started ${raced.startedAfterDeletion.toFixed(0)} ms after the deletion answered 200, ` +
      `yet it succeeded (${raced.other.status})`,
  ];
}

/** The two replicas in the round's order: the first request through one, the second through the other. */
const replicas = (round: number): [string, string] => (round % 2 === 0 ? [A, B] : [B, A]);
const name = (g: string) => (g === A ? "A" : "B");

/**
 * Whether the answers are envelopes with statuses of the allowed sets, and the pair one `allowedPair`
 * accepts. Answers the problems found.
 */
function judge(
  first: Answer,
  second: Answer,
  sets: { first: number[]; second: number[] },
  allowedPair: (first: number, second: number) => boolean,
): string[] {
  const problems: string[] = [];
  for (const [which, res, allowed] of [
    ["first", first, sets.first],
    ["second", second, sets.second],
  ] as const) {
    if (res.status >= 500) problems.push(`${which} answered ${res.status} (never 5xx)`);
    else if (!allowed.includes(res.status))
      problems.push(`${which} answered ${res.status}, not one of ${allowed}`);
    if (!isEnvelope(res)) problems.push(`${which} is not the envelope: ${JSON.stringify(res.body)}`);
  }
  if (problems.length === 0 && !allowedPair(first.status, second.status)) {
    problems.push(`the pair ${first.status}/${second.status} is not allowed`);
  }
  return problems;
}

/** The failure message of a race: outcome counts, then the first rounds that went wrong. */
function report(title: string, rounds: Round[], n = 12): string {
  const bad = rounds.filter((r) => r.problems.length > 0);
  return [
    `${title}: ${bad.length}/${rounds.length} rounds went wrong`,
    ...bad
      .slice(0, n)
      .map(
        (r) =>
          `round ${r.round} (${r.label}): ${brief(r.first)} | ${brief(r.second)} → ${r.problems.join("; ")}`,
      ),
    ...(bad.length > n ? [`… ${bad.length - n} more`] : []),
  ].join("\n");
}

/** Counts and timings, printed whether the test passes or not. */
function log(title: string, start: number, rounds: Round[], left: number) {
  const pairs = tally(rounds.map((r) => `${r.first.status}/${r.second.status}`));
  const bad = rounds.filter((r) => r.problems.length > 0).length;
  const late = rounds.filter((r) => r.startedAfterDeletion > 0);
  const lateWon = late.filter((r) => r.second.status === 200 && r.first.status < 300).length;
  console.log(
    `${title}: ${rounds.length} rounds in ${since(start)}; ${bad} rounds with wrong answers, ${left} orphans left\n` +
      `outcome pairs (other/deletion): ${JSON.stringify(pairs)}; the other request started after the deletion ` +
      `answered in ${late.length} rounds, and succeeded anyway in ${lateWon}`,
  );
}

/** A project of the file's Owner, small and unique. */
const projectOfOwner = (label: string) => smallProjectOf(client, owner, label, created);

/** The user's deletion: by itself or by an admin (every other pair of rounds). */
const selfDeletes = (round: number) => (round >> 1) % 2 === 0;
function deletion(c: Client, user: User, round: number, gateway: string): () => Promise<Answer> {
  return () =>
    selfDeletes(round)
      ? c.api("DELETE", "/user/delete", { token: user.token, gateway })
      : c.api("DELETE", `/user/deleteuser/${user.id}`, { token: admin.token, gateway });
}
const deletionLabel = (round: number) => (selfDeletes(round) ? "self-deletion" : "admin's deletion");
/** How the round's two starts were placed (`offsetOf`). */
function order(round: number): string {
  const offset = offsetOf(round);
  if (offset === 0) return "sent at once";
  return offset > 0 ? `deletion sent ${offset} ms ahead` : `deletion sent ${-offset} ms after`;
}

/** Invites each user to the project (as `role`) from the Owner, and has each accept when `accept`. */
async function invitedAll(users: User[], project: ProjectDto, role: string, accept: boolean) {
  const clients = Array.from({ length: Math.ceil(users.length / 20) }, () => createClient(() => sys));
  await inBatches(users, 12, async (user, i) => {
    const c = clients[Math.floor(i / 20)] as Client;
    const invite = await c.api("POST", "/user/invite", {
      token: owner.token,
      body: { projectID: project.projectID, username: user.username, role },
    });
    expectEnvelope(invite, 201, `invite user ${i} as ${role}`);
    if (!accept) return;
    const reply = await c.api("PUT", "/user/invitationreply", {
      token: user.token,
      body: { projectID: project.projectID, isAccepted: true },
    });
    expectEnvelope(reply, 200, `user ${i} accepts`);
  });
}

/** The scope of a race's database check: its project and its users. */
const scopeOf = (users: User[], projectIds: number[]): OrphanScope => ({
  projectIds,
  userIds: users.map((u) => u.id),
  addresses: users.map((u) => u.wallet.address),
});

describe("a user's deletion racing that user's own requests, or a request about them (rules.md §8.3)", () => {
  it(`DELETE /user/delete racing the same user's POST /Project/Add: Add 201 and delete 409, or delete 200 and Add 401/404/409 (${ROUNDS} rounds)`, async () => {
    const start = performance.now();
    const users = await signedInUsers(() => sys, ROUNDS, { concurrency: 24 });
    const made = since(start);
    const rounds: Round[] = [];
    /** Orphans found the moment both answers were in (the project is deleted right after), by round. */
    const orphanedRounds: [number, string][] = [];
    await inBatches(users, LANES, async (user, round) => {
      const c = createClient(() => sys);
      const content = newContent(`add vs delete ${round}`, false);
      const [viaAdd, viaDelete] = replicas(round);
      const raced = await staggered(
        () =>
          c.api("POST", "/Project/Add", {
            token: user.token,
            gateway: viaAdd,
            body: { projectName: `race add ${round} ${user.username}`, fileHex: hexOf(content.file) },
          }),
        () => c.api("DELETE", "/user/delete", { token: user.token, gateway: viaDelete }),
        offsetOf(round),
      );
      const { other: add, deletion: del } = raced;
      const problems = [
        ...judge(
          add,
          del,
          { first: [201, 401, 404, 409], second: [200, 409] },
          (a, d) => (a === 201 && d === 409) || (d === 200 && [401, 404, 409].includes(a)),
        ),
        ...lateWinner(raced),
      ];
      rounds.push({
        round,
        label: `Add on ${name(viaAdd)}, delete on ${name(viaDelete)}, ${order(round)}`,
        first: add,
        second: del,
        startedAfterDeletion: raced.startedAfterDeletion,
        problems,
      });
      const project = add.status === 201 ? (add.body.data as ProjectDto) : undefined;
      if (project) created.add(project.projectID);
      // Both answers are in: the project (if any) has its accepted Owner, who exists; the user (if
      // deleted) has no project and no row.
      const left = await orphans(db, scopeOf([user], project ? [project.projectID] : []));
      if (orphanCount(left) > 0) {
        orphanedRounds.push([
          round,
          `round ${round} (Add ${add.status}, delete ${del.status}):\n${describeOrphans(left)}`,
        ]);
      } else if (problems.length > 0 && project) {
        // A wrong pair that left no orphan: what the database holds, for the log.
        const rows = await db.query(
          `SELECT p.id, (SELECT json_agg(m) FROM projects.permission m WHERE m.project_id = p.id) AS permissions,
                  EXISTS (SELECT 1 FROM users."user" u WHERE u.id = $2) AS user_exists
             FROM projects.project p WHERE p.id = $1`,
          [project.projectID, user.id],
        );
        console.log(`round ${round}: ${add.status}/${del.status} left ${JSON.stringify(rows.rows)}`);
      }
      if (project) {
        const gone = await c.api("DELETE", `/Project/Delete/${project.projectID}`, { token: admin.token });
        if (gone.status === 200) created.delete(project.projectID);
      }
    });
    rounds.sort((a, b) => a.round - b.round);
    orphanedRounds.sort(([a], [b]) => a - b);
    // What the users' deletions leave once every event is applied (their projects are deleted by now).
    const settled = await settledOrphans(db, scopeOf(users, []), 5000);
    log(`Add vs delete (users made in ${made})`, start, rounds, orphanedRounds.length + orphanCount(settled));
    expect
      .soft(
        rounds.filter((r) => r.problems.length > 0).length,
        report("POST /Project/Add racing DELETE /user/delete", rounds),
      )
      .toBe(0);
    expect
      .soft(
        orphanedRounds.length,
        `orphans when both answers were in, in ${orphanedRounds.length} rounds:\n${orphanedRounds
          .slice(0, 8)
          .map(([, text]) => text)
          .join("\n")}`,
      )
      .toBe(0);
    expect(orphanCount(settled), `orphans left once settled:\n${describeOrphans(settled)}`).toBe(0);
  });

  it(`the Owner inviting a user racing that user's deletion: no invitation of a deleted user is left; an invite started after the deletion answered loses (${ROUNDS} rounds)`, async () => {
    const start = performance.now();
    const project = await projectOfOwner("invitee deleted");
    const users = await signedInUsers(() => sys, ROUNDS, { concurrency: 24 });
    const made = since(start);
    const rounds: Round[] = [];
    await inBatches(users, LANES, async (user, round) => {
      const c = createClient(() => sys);
      const [viaInvite, viaDelete] = replicas(round);
      const raced = await staggered(
        () =>
          c.api("POST", "/user/invite", {
            token: owner.token,
            gateway: viaInvite,
            body: { projectID: project.projectID, username: user.username, role: "Editor" },
          }),
        deletion(c, user, round, viaDelete),
        offsetOf(round),
      );
      const { other: invite, deletion: del } = raced;
      rounds.push({
        round,
        label: `invite on ${name(viaInvite)}, ${deletionLabel(round)} on ${name(viaDelete)}, ${order(round)}`,
        first: invite,
        second: del,
        startedAfterDeletion: raced.startedAfterDeletion,
        // The inviter is not deleted: its invite is 201, or 404 (no such user) / 409 when it loses.
        problems: [
          ...judge(invite, del, { first: [201, 404, 409], second: [200, 409] }, () => true),
          ...lateWinner(raced),
        ],
      });
    });
    rounds.sort((a, b) => a.round - b.round);
    const settled = await settledOrphans(db, scopeOf(users, [project.projectID]), 5000);
    log(`invite vs invitee's deletion (users made in ${made})`, start, rounds, orphanCount(settled));
    expect
      .soft(
        rounds.filter((r) => r.problems.length > 0).length,
        report("POST /user/invite (by the Owner) racing the invitee's deletion", rounds),
      )
      .toBe(0);
    expect(orphanCount(settled), `orphans left once settled:\n${describeOrphans(settled)}`).toBe(0);
  });

  it(`an accepted Co-Owner inviting someone racing its own deletion: no row of the deleted user is left; an invite started after the deletion answered loses (${ROUNDS} rounds)`, async () => {
    const start = performance.now();
    const project = await projectOfOwner("inviter deleted");
    // The Co-Owners (one per round) and one invitee per lane, whose invitation is taken back after each
    // round it was made in (so the next round's invite is not a 409 for that reason).
    const [coOwners, invitees] = await Promise.all([
      signedInUsers(() => sys, ROUNDS, { concurrency: 24 }),
      signedInUsers(() => sys, LANES),
    ]);
    await invitedAll(coOwners, project, "Co-Owner", true);
    const ready = since(start);
    const rounds: Round[] = [];
    const lanes = Array.from({ length: LANES }, (_, lane) => lane);
    await Promise.all(
      lanes.map(async (lane) => {
        const invitee = invitees[lane] as User;
        for (let round = lane; round < ROUNDS; round += LANES) {
          const coOwner = coOwners[round] as User;
          const c = createClient(() => sys);
          const [viaInvite, viaDelete] = replicas(round);
          const raced = await staggered(
            () =>
              c.api("POST", "/user/invite", {
                token: coOwner.token,
                gateway: viaInvite,
                body: { projectID: project.projectID, username: invitee.username, role: "Editor" },
              }),
            deletion(c, coOwner, round, viaDelete),
            offsetOf(round),
          );
          const { other: invite, deletion: del } = raced;
          rounds.push({
            round,
            label: `Co-Owner's invite on ${name(viaInvite)}, ${deletionLabel(round)} on ${name(viaDelete)}, ${order(round)}`,
            first: invite,
            second: del,
            startedAfterDeletion: raced.startedAfterDeletion,
            problems: [
              ...judge(invite, del, { first: [201, 401, 404, 409], second: [200, 409] }, () => true),
              ...lateWinner(raced),
            ],
          });
          if (invite.status === 201) {
            const takeBack = await c.api("DELETE", "/user/removecollab", {
              token: owner.token,
              body: { projectID: project.projectID, username: invitee.username },
            });
            expectEnvelope(takeBack, 200, `round ${round}: the Owner takes the invitation back`);
          }
        }
      }),
    );
    rounds.sort((a, b) => a.round - b.round);
    const settled = await settledOrphans(db, scopeOf(coOwners, [project.projectID]), 5000);
    log(
      `Co-Owner's invite vs its deletion (Co-Owners ready by ${ready})`,
      start,
      rounds,
      orphanCount(settled),
    );
    expect
      .soft(
        rounds.filter((r) => r.problems.length > 0).length,
        report("POST /user/invite (by a Co-Owner) racing the Co-Owner's deletion", rounds),
      )
      .toBe(0);
    expect(orphanCount(settled), `orphans left once settled:\n${describeOrphans(settled)}`).toBe(0);
  });

  it(`accepting an invitation racing the invitee's deletion: no membership of a deleted user is left; an accept started after the deletion answered loses (${ROUNDS} rounds)`, async () => {
    const start = performance.now();
    const project = await projectOfOwner("accept vs delete");
    const users = await signedInUsers(() => sys, ROUNDS, { concurrency: 24 });
    await invitedAll(users, project, "Editor", false);
    const ready = since(start);
    const rounds: Round[] = [];
    await inBatches(users, LANES, async (user, round) => {
      const c = createClient(() => sys);
      const [viaReply, viaDelete] = replicas(round);
      const raced = await staggered(
        () =>
          c.api("PUT", "/user/invitationreply", {
            token: user.token,
            gateway: viaReply,
            body: { projectID: project.projectID, isAccepted: true },
          }),
        deletion(c, user, round, viaDelete),
        offsetOf(round),
      );
      const { other: reply, deletion: del } = raced;
      rounds.push({
        round,
        label: `accept on ${name(viaReply)}, ${deletionLabel(round)} on ${name(viaDelete)}, ${order(round)}`,
        first: reply,
        second: del,
        startedAfterDeletion: raced.startedAfterDeletion,
        problems: [
          ...judge(reply, del, { first: [200, 401, 404, 409], second: [200, 409] }, () => true),
          ...lateWinner(raced),
        ],
      });
    });
    rounds.sort((a, b) => a.round - b.round);
    const settled = await settledOrphans(db, scopeOf(users, [project.projectID]), 5000);
    log(`accept vs delete (invitees ready by ${ready})`, start, rounds, orphanCount(settled));
    expect
      .soft(
        rounds.filter((r) => r.problems.length > 0).length,
        report("PUT /user/invitationreply (accept) racing the invitee's deletion", rounds),
      )
      .toBe(0);
    expect(orphanCount(settled), `orphans left once settled:\n${describeOrphans(settled)}`).toBe(0);
  });
});
