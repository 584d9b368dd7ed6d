import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Answer, createClient } from "./client.ts";
import { createPeople, expectEnvelope, type ProjectDto, type User } from "./projects-kit.ts";
import {
  brief,
  type Client,
  gatewaysOf,
  inBatches,
  readySignIn,
  signedInUsers,
  since,
  smallProjectOf,
} from "./races-kit.ts";
import { type SharedSystem, sharedSystem } from "./shared.ts";

// "At once" (rules.md §2.14, §3.3, §8.2): once an admin's role change or an account deletion has answered,
// every request that starts afterwards, on ANY gateway replica, is judged by the new state; a token issued
// after the change is never revoked by it. On the shared system, which runs two gateway replicas (A and
// B): the change goes through A, the next request through A or B. Every round has a client (an IP) of its
// own: sign-in and nonce limits are per IP.
const ROUNDS = 200;
/** Owners demoted and promoted at once in the demotion window (each takes every other round). */
const DEMOTION_LANES = 2;
/** Deletion-window rounds run at once (each on an Editor of its own). */
const DELETION_LANES = 4;

let sys: SharedSystem;
let A: string;
let B: string;
const client = createClient(() => sys);
const people = createPeople(() => sys, client);
let admin: User;
/** The projects this file proposed, deleted at the end (the shared review queue is small). */
const created: number[] = [];

beforeAll(async () => {
  sys = await sharedSystem();
  [A, B] = gatewaysOf(sys);
  admin = await people.newUser("Admin");
});

afterAll(async () => {
  if (!admin) return;
  const cleaner = createClient(() => sys);
  await Promise.all(
    created.map((id) => cleaner.api("DELETE", `/Project/Delete/${id}`, { token: admin.token })),
  );
});

const name = (g: string) => (g === A ? "A" : "B");

/** A project `owner` proposed (its Owner), small and unique. */
const projectOf = (owner: User, label: string) =>
  smallProjectOf(client, owner, label, { add: (id: number) => created.push(id) });

/** A member's write: the markdown through the path, or an Update of the description (`kind` picks). */
function write(c: Client, token: string, gateway: string, project: ProjectDto, kind: number, what: string) {
  return kind % 2 === 0
    ? c.api("PUT", `/Project/UpdateMarkDown/${project.projectID}/${what}`, { token, gateway })
    : c.api("PUT", "/Project/Update", {
        token,
        gateway,
        body: {
          projectID: project.projectID,
          projectName: project.projectName,
          projectDescription: what,
        },
      });
}

const route = (kind: number) => (kind % 2 === 0 ? "UpdateMarkDown" : "Update");

/** The first `n` failed rounds, one line each, and how many failed. */
function report(title: string, failures: string[], n = 12): string {
  return [
    `${title}: ${failures.length}/${ROUNDS} rounds`,
    ...failures.slice(0, n),
    ...(failures.length > n ? [`… ${failures.length - n} more`] : []),
  ].join("\n");
}

describe("an admin's role change has answered: the next request on any replica is judged by it", () => {
  it(`demotion to Blacklist: the old token's write is 401 at once; a token signed in after the promotion back writes at once (${ROUNDS} rounds)`, async () => {
    const start = performance.now();
    /** Rounds where the old token was not refused (2xx: it wrote as a demoted user). */
    const oldTokenFailures: [number, string][] = [];
    const oldTokenWrote: number[] = [];
    /** Rounds where the token signed in after the promotion back was refused. */
    const newTokenFailures: [number, string][] = [];
    const statuses: Record<string, number> = {};
    const count = (key: string) => (statuses[key] = (statuses[key] ?? 0) + 1);

    // Two owners, each of a project of its own, take the rounds in turn (rounds of one owner one after
    // another: its role goes down and up again each round).
    await Promise.all(
      Array.from({ length: DEMOTION_LANES }, async (_, lane) => {
        const owner = await people.newUser("Base");
        const project = await projectOf(owner, `demotion window ${lane}`);
        const address = owner.wallet.address;
        let token = owner.token;
        for (let round = lane; round < ROUNDS; round += DEMOTION_LANES) {
          const c = createClient(() => sys);
          // The lane's k-th round: the old token's write goes to A or B (bit 0 of k), the sign-in to the
          // other; the write is UpdateMarkDown or Update (bit 1 of k).
          const k = Math.floor(round / DEMOTION_LANES);
          const at = k % 2 === 0 ? A : B;
          const kind = k >> 1;
          const demote = await c.api("PATCH", `/user/updaterole/${address}/Blacklist`, {
            token: admin.token,
            gateway: A,
          });
          expectEnvelope(demote, 200, `round ${round}: the admin demotes the owner`);
          // The instant the demotion answered: the token from before it.
          const old = await write(c, token, at, project, kind, `old-${round}`);
          count(`old token ${route(kind)} on ${name(at)}: ${old.status}`);
          if (old.status !== 401) {
            oldTokenFailures.push([
              round,
              `round ${round}: old token ${route(kind)} on ${name(at)} → ${brief(old)} (want 401)`,
            ]);
          }
          if (old.status < 300) oldTokenWrote.push(round);

          const signInReady = readySignIn(c, owner.wallet, at === A ? B : A);
          signInReady.catch(() => {}); // awaited below; not unhandled if the promotion's check throws first
          const promote = await c.api("PATCH", `/user/updaterole/${address}/Base`, {
            token: admin.token,
            gateway: A,
          });
          expectEnvelope(promote, 200, `round ${round}: the admin sets the owner back to Base`);
          // Signed in right after the promotion answered (through A or B; the nonce fetched before, so the
          // Login starts at once), writes at once through both.
          const login = await (await signInReady)();
          expectEnvelope(login, 200, `round ${round}: the owner signs in again`);
          token = login.body.data as string;
          const [onA, onB] = (await Promise.all(
            [A, B].map((gateway) => write(c, token, gateway, project, kind, `new-${round}`)),
          )) as [Answer, Answer];
          count(`new token ${route(kind)} on A: ${onA.status}`);
          count(`new token ${route(kind)} on B: ${onB.status}`);
          if (onA.status !== 200 || onB.status !== 200) {
            newTokenFailures.push([
              round,
              `round ${round}: token signed in after the promotion, ${route(kind)} → A ${brief(onA)}, ` +
                `B ${brief(onB)} (want 200 on both)`,
            ]);
          }
        }
      }),
    );
    const byRound = (list: [number, string][]) => list.sort(([a], [b]) => a - b).map(([, text]) => text);
    oldTokenWrote.sort((a, b) => a - b);
    console.log(
      `demotion window: ${ROUNDS} rounds in ${since(start)}; old token not 401 in ${oldTokenFailures.length} ` +
        `(2xx in ${oldTokenWrote.length}), new token refused in ${newTokenFailures.length}\n` +
        JSON.stringify(statuses, null, 1),
    );
    expect
      .soft(
        oldTokenFailures.length,
        report(
          "the demoted owner's older token was not refused (401) right after the demotion answered " +
            `(it WROTE in ${oldTokenWrote.length} rounds: ${oldTokenWrote.slice(0, 20).join(", ")}…)`,
          byRound(oldTokenFailures),
        ),
      )
      .toBe(0);
    expect(
      newTokenFailures.length,
      report(
        "a token signed in after the promotion answered did not write on both replicas",
        byRound(newTokenFailures),
      ),
    ).toBe(0);
  });

  it("a token signed in after a role change answered works at once and still 1.2 s later (a late revocation would land then); as Blacklist it reads and its writes are 403", async () => {
    // Six members of one project (its Owner and five accepted Editors), three role changes each, the six
    // in parallel: 18 changes, each followed by a sign-in whose Login starts the moment the change answered.
    const owner = await people.newUser("Base");
    const project = await projectOf(owner, "late revocation");
    const editors = await signedInUsers(() => sys, 5);
    for (const editor of editors) {
      const invite = await client.api("POST", "/user/invite", {
        token: owner.token,
        body: { projectID: project.projectID, username: editor.username },
      });
      expectEnvelope(invite, 201, "invite");
      const accept = await client.api("PUT", "/user/invitationreply", {
        token: editor.token,
        body: { projectID: project.projectID, isAccepted: true },
      });
      expectEnvelope(accept, 200, "accept");
    }
    const failures: string[] = [];
    /** Checks that found the new token refused (401): a revocation that reached it. */
    let revoked = 0;
    let writes = 0;
    // Each admin's change revokes the older tokens. Whitelist and Base members write (200); Blacklist is
    // read-only (§8): its writes are 403, never 401, and it still reads.
    const roles = ["Whitelist", "Blacklist", "Base"];
    await Promise.all(
      [owner, ...editors].map(async (member, lane) => {
        for (const [round, role] of roles.entries()) {
          const c = createClient(() => sys);
          const [changeVia, signInVia] = (lane + round) % 2 === 0 ? [A, B] : [B, A];
          // The nonce beforehand: only the Login itself follows the change.
          const login = await readySignIn(c, member.wallet, signInVia);
          const change = await c.api("PATCH", `/user/updaterole/${member.wallet.address}/${role}`, {
            token: admin.token,
            gateway: changeVia,
          });
          expectEnvelope(change, 200, `member ${lane}, round ${round}: the admin sets ${role}`);
          const signedIn = await login();
          expectEnvelope(signedIn, 200, `member ${lane}, round ${round}: sign-in after the change`);
          const token = signedIn.body.data as string;
          const want = role === "Blacklist" ? 403 : 200;
          const writeOnBoth = (when: string) =>
            Promise.all(
              [A, B].map(async (gateway) => {
                writes++;
                const path = `/Project/UpdateMarkDown/${project.projectID}/${when}-${lane}-${round}`;
                const [res, read] = await Promise.all([
                  c.api("PUT", path, { token, gateway }),
                  c.api("GET", `/Project/Get/${project.projectID}`, { token, gateway }),
                ]);
                if (res.status !== want || read.status !== 200) {
                  if (res.status === 401 || read.status === 401) revoked++;
                  failures.push(
                    `member ${lane}, round ${round} (${role}, changed on ${name(changeVia)}, signed in on ` +
                      `${name(signInVia)}): ${when} on ${name(gateway)}: write → ${brief(res)} (want ${want}), ` +
                      `read → ${brief(read)} (want 200)`,
                  );
                }
              }),
            );
          await writeOnBoth("at-once");
          // Deliberate: a revocation applied late (from an event) would refuse this token about now.
          await new Promise((r) => setTimeout(r, 1200));
          await writeOnBoth("after-1.2s");
        }
      }),
    );
    const summary =
      `${failures.length} of ${writes} checks failed: ${revoked} found the new token revoked (401), ` +
      `${failures.length - revoked} another status than the new role's`;
    console.log(`token issued after the change: ${summary}`);
    expect(
      failures.length,
      `a token issued after the change was not judged by the new role (${summary}):\n${failures.join("\n")}`,
    ).toBe(0);
  });
});

describe("an account deletion has answered: the deleted user's token is refused at once on any replica", () => {
  it(`an accepted Editor deletes itself, or an admin deletes it: its token's next write is 401 (${ROUNDS} rounds)`, async () => {
    const start = performance.now();
    const owner = await people.newUser("Base");
    const project = await projectOf(owner, "deletion window");
    const editors = await signedInUsers(() => sys, ROUNDS, { concurrency: 24 });
    const made = since(start);
    // Each invited and accepted, a few at a time, from an IP per group (general limits are per IP).
    const clients = Array.from({ length: Math.ceil(ROUNDS / 20) }, () => createClient(() => sys));
    await inBatches(editors, 12, async (editor, i) => {
      const c = clients[Math.floor(i / 20)] as Client;
      const invite = await c.api("POST", "/user/invite", {
        token: owner.token,
        body: { projectID: project.projectID, username: editor.username, role: "Editor" },
      });
      expectEnvelope(invite, 201, `invite editor ${i}`);
      const accept = await c.api("PUT", "/user/invitationreply", {
        token: editor.token,
        body: { projectID: project.projectID, isAccepted: true },
      });
      expectEnvelope(accept, 200, `editor ${i} accepts`);
    });
    const ready = since(start);

    const failures: [number, string][] = [];
    const statuses: Record<string, number> = {};
    await inBatches(editors, DELETION_LANES, async (editor, round) => {
      const c = createClient(() => sys);
      // Every combination in turn: who deletes (bit 0), the write's replica (bit 1), the deletion's (bit 2).
      const self = round % 2 === 0;
      const at = (round >> 1) % 2 === 0 ? A : B;
      const deleteVia = (round >> 2) % 2 === 0 ? A : B;
      // The Editor writes before (its session is warm on both replicas, and it is a member).
      const before = await c.api("PUT", `/Project/UpdateMarkDown/${project.projectID}/before-${round}`, {
        token: editor.token,
        gateway: at,
      });
      expectEnvelope(before, 200, `round ${round}: the Editor writes before its deletion`);
      const deletion = self
        ? await c.api("DELETE", "/user/delete", { token: editor.token, gateway: deleteVia })
        : await c.api("DELETE", `/user/deleteuser/${editor.id}`, { token: admin.token, gateway: deleteVia });
      expectEnvelope(deletion, 200, `round ${round}: ${self ? "self-deletion" : "an admin's deletion"}`);
      const after = await c.api("PUT", `/Project/UpdateMarkDown/${project.projectID}/after-${round}`, {
        token: editor.token,
        gateway: at,
      });
      const key = `${self ? "self" : "admin"}-deleted on ${name(deleteVia)}, write on ${name(at)}: ${after.status}`;
      statuses[key] = (statuses[key] ?? 0) + 1;
      if (after.status !== 401) {
        failures.push([
          round,
          `round ${round}: ${self ? "DELETE /user/delete" : "DELETE /user/deleteuser/{id}"} answered 200 on ${name(deleteVia)}; ` +
            `the deleted Editor's UpdateMarkDown on ${name(at)} → ${brief(after)} (want 401)`,
        ]);
      }
    });
    failures.sort(([a], [b]) => a - b);
    console.log(
      `deletion window: ${ROUNDS} users made in ${made}, members by ${ready}, all rounds by ${since(start)}; ` +
        `not 401 in ${failures.length}\n${JSON.stringify(statuses, null, 1)}`,
    );
    expect(
      failures.length,
      report(
        "a deleted user's token was not refused (401) right after the deletion answered",
        failures.map(([, text]) => text),
      ),
    ).toBe(0);
  });
});
