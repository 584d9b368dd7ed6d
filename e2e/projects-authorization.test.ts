import { waitFor } from "@fundraise/bus/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Answer, createClient } from "./client.ts";
import {
  createPeople,
  expectEnvelope,
  hexOf,
  newContent,
  type ProjectDto,
  publishEvaluation,
  type User,
} from "./projects-kit.ts";
import { type SharedSystem, sharedSystem } from "./shared.ts";

// Every project route and membership route × every kind of caller, on the running system. Each row is
// written from behaviour.md (§4 for projects, §3 for memberships); where the running system answers
// otherwise, the cell is listed in DEPARTURES with the reason, so the table stays behaviour.md's.
// Roles come from the chain (registry status / admin role, read at login). "member" is an accepted Editor
// of the project and "owner" its Owner, both Base users; the other callers have no permission on it.
const CALLERS = [
  "anonymous",
  "Base",
  "Blacklist",
  "Whitelist",
  "Viewer",
  "Admin",
  "member",
  "owner",
] as const;
type Caller = (typeof CALLERS)[number];
type Row = Record<Caller, number>;

let sys: SharedSystem;
const client = createClient(() => sys);
const people = createPeople(() => sys, client);
const users = new Map<Caller, User>();
/** A user who is none of the callers: the one invited, and the Editor removed. */
let spare: User;
const created: number[] = [];

beforeAll(async () => {
  sys = await sharedSystem();
  const roles = {
    Base: "Base",
    Blacklist: "Blacklist",
    Whitelist: "Whitelist",
    Viewer: "Viewer",
    Admin: "Admin",
    member: "Base",
    owner: "Base",
  } as const;
  const made = Object.entries(roles).map(async ([caller, role]) => {
    users.set(caller as Caller, await people.newUser(role));
  });
  [spare] = await Promise.all([people.newUser("Base"), ...made]);
});

afterAll(async () => {
  // What this file proposed does not stay in the shared system's review queue.
  const admin = users.get("Admin");
  if (admin) await Promise.all(created.map((id) => call("DELETE", `/Project/Delete/${id}`, admin)));
});

const user = (caller: Caller) => users.get(caller) as User;
const call = (method: string, path: string, as: User | undefined, body?: unknown) =>
  client.api(method, path, { ...(as ? { token: as.token } : {}), ...(body === undefined ? {} : { body }) });
const row = (...statuses: number[]) => Object.fromEntries(CALLERS.map((c, i) => [c, statuses[i]])) as Row;
let counter = 0;

/** A project the owner proposed, with the member as an accepted Editor: Pending, not viewer-accepted. */
async function team(): Promise<ProjectDto> {
  const owner = user("owner");
  const content = newContent(`matrix ${++counter}`);
  const add = await call("POST", "/Project/Add", owner, {
    projectName: `matrix ${counter} ${Math.random().toString(36).slice(2, 10)}`,
    fileHex: hexOf(content.file),
    imageUrl: hexOf(content.image as Buffer),
  });
  expectEnvelope(add, 201, "team: Add");
  const project = add.body.data as ProjectDto;
  created.push(project.projectID);
  await invite(project.projectID, user("member"));
  const accept = await call("PUT", "/user/invitationreply", user("member"), {
    projectID: project.projectID,
    isAccepted: true,
  });
  expectEnvelope(accept, 200, "team: member accepts");
  return project;
}

async function invite(id: number, who: User, role = "Editor") {
  const res = await call("POST", "/user/invite", user("owner"), {
    projectID: id,
    username: who.username,
    role,
  });
  expectEnvelope(res, 201, `invite ${who.username}`);
}

/** A team project a viewer accepted (still Pending on chain). */
async function accepted(): Promise<ProjectDto> {
  const project = await team();
  expectEnvelope(await call("PUT", `/Project/ViewerReply/${project.projectID}/true`, user("Viewer")), 200);
  return project;
}

/** A team project whose hash the chain evaluated as approved (the first evaluation wins). */
async function approved(project: ProjectDto): Promise<ProjectDto> {
  await publishEvaluation(sys, project.fileHash, true);
  const status = async () =>
    ((await call("GET", `/Project/Get/${project.projectID}`, user("Admin"))).body.data as ProjectDto).status;
  await waitFor(async () => (await status()) === "Approved", 10_000, "the evaluation applied");
  return { ...project, status: "Approved" };
}

/** Each caller in turn sends `send`; an anonymous caller sends no token. */
async function each(send: (as: User | undefined, caller: Caller) => Promise<Answer>): Promise<Row> {
  const result = {} as Row;
  for (const caller of CALLERS) {
    const res = await send(caller === "anonymous" ? undefined : user(caller), caller);
    result[caller] = res.status;
    expectEnvelope(res, res.status, `${caller} → ${res.status}`);
  }
  return result;
}

/** Each caller on a fixture of its own, for calls that change or remove it. */
async function eachFresh<F>(
  make: () => Promise<F>,
  send: (fixture: F, as: User | undefined, caller: Caller) => Promise<Answer>,
): Promise<Row> {
  const fixtures = await Promise.all(CALLERS.map(() => make()));
  let i = 0;
  return each((as, caller) => send(fixtures[i++] as F, as, caller));
}

// Fixtures of the rows that only read or are refused: made once.
let pending: ProjectDto;
let reviewed: ProjectDto;
let approvedAndReviewed: ProjectDto;
let approvedUnreviewed: ProjectDto;
beforeAll(async () => {
  [pending, reviewed, approvedAndReviewed, approvedUnreviewed] = await Promise.all([
    team(),
    accepted(),
    accepted().then(approved),
    team().then(approved),
  ]);
});

/**
 * Where the running system answers otherwise than behaviour.md: the cells it answers, and why. A cell
 * listed here that starts to answer behaviour.md's status fails the test, so the list stays true.
 */
const DEPARTURES: Record<string, { cells: Partial<Row>; why: string }> = {
  // None today: "sync now" (ChangeStatus, CreateAuction, StartAuction) reads the index or the chain.
};

//                                         anonymous Base Blacklist Whitelist Viewer Admin member owner
const cases: [string, () => Promise<Row>, Row][] = [
  // ── §4 reads: anyone; visibility decides single reads (hidden = 404) ─────────────────────────────
  [
    "GET /Project/Get/All",
    () => each((as) => call("GET", "/Project/Get/All", as)),
    row(200, 200, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/Get/All?withHex=true",
    () => each((as) => call("GET", "/Project/Get/All?withHex=true", as)),
    row(200, 200, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/Get/{id} (Pending, not viewer-accepted)",
    () => each((as) => call("GET", `/Project/Get/${pending.projectID}`, as)),
    row(404, 404, 404, 404, 200, 200, 200, 200),
  ],
  [
    "GET /Project/Get/{id} (viewer-accepted, Pending)",
    () => each((as) => call("GET", `/Project/Get/${reviewed.projectID}`, as)),
    row(404, 404, 404, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/Get/{id} (viewer-accepted, Approved)",
    () => each((as) => call("GET", `/Project/Get/${approvedAndReviewed.projectID}`, as)),
    row(200, 200, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/Get/{id} (Approved, not viewer-accepted)",
    () => each((as) => call("GET", `/Project/Get/${approvedUnreviewed.projectID}`, as)),
    row(404, 404, 404, 404, 200, 200, 200, 200),
  ],
  [
    "GET /Project/Get/{id} (no such project)",
    () => each((as) => call("GET", "/Project/Get/2147483647", as)),
    row(404, 404, 404, 404, 404, 404, 404, 404),
  ],
  [
    "GET /Project/GetByStatus/{status}",
    () => each((as) => call("GET", "/Project/GetByStatus/approved", as)),
    row(200, 200, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/GetByStatus/{status} (not a status)",
    () => each((as) => call("GET", "/Project/GetByStatus/Done", as)),
    row(400, 400, 400, 400, 400, 400, 400, 400),
  ],
  [
    "GET /Project/GetProjects/{n}",
    () => each((as) => call("GET", "/Project/GetProjects/5", as)),
    row(200, 200, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/GetAllPermissioned/{withHex}",
    () => each((as) => call("GET", "/Project/GetAllPermissioned/false", as)),
    row(401, 200, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/GetAllInvitations",
    () => each((as) => call("GET", "/Project/GetAllInvitations", as)),
    row(401, 200, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/GetAllHashes/true",
    () => each((as) => call("GET", "/Project/GetAllHashes/true", as)),
    row(401, 200, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/GetAllHashes/false",
    () => each((as) => call("GET", "/Project/GetAllHashes/false", as)),
    row(401, 403, 403, 403, 403, 200, 403, 403),
  ],
  [
    "GET /Project/ViewerPage/GetAll",
    () => each((as) => call("GET", "/Project/ViewerPage/GetAll", as)),
    row(401, 403, 403, 403, 200, 200, 403, 403),
  ],
  // ── §4 writes ─────────────────────────────────────────────────────────────────────────────────────
  [
    "POST /Project/Add",
    () =>
      each(async (as, caller) => {
        const content = newContent(`add by ${caller}`);
        const res = await call("POST", "/Project/Add", as, {
          projectName: `add by ${caller} ${Math.random().toString(36).slice(2, 10)}`,
          fileHex: hexOf(content.file),
        });
        if (res.status === 201) created.push((res.body.data as ProjectDto).projectID);
        return res;
      }),
    row(401, 201, 403, 201, 201, 201, 201, 201),
  ],
  [
    "PUT /Project/Update (Pending, not viewer-accepted)",
    () =>
      each((as, caller) =>
        call("PUT", "/Project/Update", as, {
          projectID: pending.projectID,
          projectName: pending.projectName,
          projectDescription: `edited by ${caller}`,
        }),
      ),
    row(401, 404, 404, 404, 403, 403, 200, 200),
  ],
  [
    "PUT /Project/Update (viewer-accepted, Pending)",
    () =>
      each((as, caller) =>
        call("PUT", "/Project/Update", as, {
          projectID: reviewed.projectID,
          projectName: reviewed.projectName,
          projectDescription: `edited by ${caller}`,
        }),
      ),
    row(401, 404, 404, 403, 403, 403, 200, 200),
  ],
  [
    "PUT /Project/UpdateMarkDown/{id}/{markdown}",
    () =>
      each((as, caller) => call("PUT", `/Project/UpdateMarkDown/${pending.projectID}/by%20${caller}`, as)),
    row(401, 404, 404, 404, 403, 403, 200, 200),
  ],
  [
    "PUT /Project/UpdateMarkDown/{id}/{markdown} (body form, viewer-accepted and Approved)",
    () =>
      each((as, caller) =>
        call("PUT", `/Project/UpdateMarkDown/${approvedAndReviewed.projectID}/x`, as, {
          markDown: `# ${caller}`,
        }),
      ),
    row(401, 403, 403, 403, 403, 403, 200, 200),
  ],
  // Blacklist may never rate: 403 whatever the project (its existence is not told either way). The others
  // see the project or get 404; member and owner are Base users, and Base rates Approved projects only.
  [
    "PUT /Project/Rate/{id}/{rating} (Pending, not viewer-accepted)",
    () => each((as) => call("PUT", `/Project/Rate/${pending.projectID}/3`, as)),
    row(401, 404, 403, 404, 200, 200, 403, 403),
  ],
  [
    "PUT /Project/Rate/{id}/{rating} (viewer-accepted, Pending)",
    () => each((as) => call("PUT", `/Project/Rate/${reviewed.projectID}/3`, as)),
    row(401, 404, 403, 200, 200, 200, 403, 403),
  ],
  [
    "PUT /Project/Rate/{id}/{rating} (no such project)",
    () => each((as) => call("PUT", "/Project/Rate/2147483647/3", as)),
    row(401, 404, 403, 404, 404, 404, 404, 404),
  ],
  [
    "PUT /Project/Rate/{id}/{rating} (viewer-accepted, Approved)",
    () => each((as) => call("PUT", `/Project/Rate/${approvedAndReviewed.projectID}/3`, as)),
    row(401, 200, 403, 200, 200, 200, 200, 200),
  ],
  [
    "PUT /Project/ChangeStatus/{id}",
    () => each((as) => call("PUT", `/Project/ChangeStatus/${pending.projectID}`, as)),
    row(401, 404, 404, 404, 200, 200, 200, 200),
  ],
  [
    "PUT /Project/CreateAuction/{id}",
    () => each((as) => call("PUT", `/Project/CreateAuction/${pending.projectID}`, as)),
    row(401, 404, 404, 404, 403, 403, 200, 200),
  ],
  [
    "PUT /Project/StartAuction/{id}",
    () => each((as) => call("PUT", `/Project/StartAuction/${pending.projectID}`, as)),
    row(401, 404, 404, 404, 403, 403, 200, 200),
  ],
  [
    "PUT /Project/ViewerReply/{id}/true",
    () => eachFresh(team, (p, as) => call("PUT", `/Project/ViewerReply/${p.projectID}/true`, as)),
    row(401, 403, 403, 403, 200, 200, 403, 403),
  ],
  [
    "PUT /Project/ViewerReply/{id}/false",
    () => eachFresh(team, (p, as) => call("PUT", `/Project/ViewerReply/${p.projectID}/false`, as)),
    row(401, 403, 403, 403, 200, 200, 403, 403),
  ],
  [
    "PUT /Project/ViewerReply/{id}/true (already viewer-accepted)",
    () => each((as) => call("PUT", `/Project/ViewerReply/${reviewed.projectID}/true`, as)),
    row(401, 403, 403, 403, 409, 409, 403, 403),
  ],
  [
    "DELETE /Project/Delete/{id}",
    () => eachFresh(team, (p, as) => call("DELETE", `/Project/Delete/${p.projectID}`, as)),
    row(401, 404, 404, 404, 403, 200, 403, 200),
  ],
  [
    "DELETE /Project/Delete/{id} (viewer-accepted)",
    () => eachFresh(accepted, (p, as) => call("DELETE", `/Project/Delete/${p.projectID}`, as)),
    row(401, 404, 404, 403, 403, 200, 403, 200),
  ],
  // ── §3 membership rows ────────────────────────────────────────────────────────────────────────────
  [
    "POST /user/invite",
    async () => {
      const p = await team();
      return each((as) =>
        call("POST", "/user/invite", as, { projectID: p.projectID, username: spare.username }),
      );
    },
    row(401, 404, 404, 404, 403, 403, 403, 201),
  ],
  [
    "PUT /user/invite (the web client's verb)",
    async () => {
      const p = await team();
      return each((as) =>
        call("PUT", "/user/invite", as, {
          projectID: p.projectID,
          username: spare.username,
          role: "Co-Owner",
        }),
      );
    },
    row(401, 404, 404, 404, 403, 403, 403, 201),
  ],
  [
    "POST /user/invite (no such project)",
    () => each((as) => call("POST", "/user/invite", as, { projectID: 2147483647, username: spare.username })),
    row(401, 404, 404, 404, 404, 404, 404, 404),
  ],
  [
    "PUT /user/invitationreply (decline; each caller invited, except member and owner, who are in)",
    async () => {
      const p = await team();
      for (const caller of ["Base", "Blacklist", "Whitelist", "Viewer", "Admin"] as const) {
        await invite(p.projectID, user(caller));
      }
      return each((as) =>
        call("PUT", "/user/invitationreply", as, { projectID: p.projectID, isAccepted: false }),
      );
    },
    row(401, 200, 200, 200, 200, 200, 404, 404),
  ],
  [
    "POST /user/invitationreply (the web client's verb and body; accept)",
    async () => {
      const p = await team();
      for (const caller of ["Base", "Blacklist", "Whitelist", "Viewer", "Admin"] as const) {
        await invite(p.projectID, user(caller));
      }
      return each((as, caller) =>
        call("POST", "/user/invitationreply", as, {
          projectID: p.projectID,
          Username: as ? user(caller).username : "",
          Role: "Editor",
          IsAccepted: true,
        }),
      );
    },
    row(401, 200, 200, 200, 200, 200, 404, 404),
  ],
  [
    "GET /user/getcoowners/{projectID}",
    () => each((as) => call("GET", `/user/getcoowners/${pending.projectID}`, as)),
    row(401, 404, 404, 404, 403, 200, 200, 200),
  ],
  [
    "GET /user/getcoowners/{projectID} (viewer-accepted and Approved)",
    () => each((as) => call("GET", `/user/getcoowners/${approvedAndReviewed.projectID}`, as)),
    row(401, 403, 403, 403, 403, 200, 200, 200),
  ],
  [
    "DELETE /user/removecollab (an Editor)",
    async () => {
      const p = await team();
      await invite(p.projectID, spare);
      expectEnvelope(
        await call("PUT", "/user/invitationreply", spare, { projectID: p.projectID, isAccepted: true }),
        200,
      );
      return each((as) =>
        call("DELETE", "/user/removecollab", as, { projectID: p.projectID, username: spare.username }),
      );
    },
    row(401, 404, 404, 404, 403, 403, 403, 200),
  ],
  [
    "DELETE /user/removecollab (a pending invitation)",
    async () => {
      const p = await team();
      await invite(p.projectID, spare);
      return each((as) =>
        call("DELETE", "/user/removecollab", as, { projectID: p.projectID, username: spare.username }),
      );
    },
    row(401, 404, 404, 404, 403, 403, 403, 200),
  ],
  [
    "DELETE /user/removecollab (the Owner)",
    async () => {
      const p = await team();
      return each((as) =>
        call("DELETE", "/user/removecollab", as, {
          projectID: p.projectID,
          username: user("owner").username,
        }),
      );
    },
    // Nobody removes the Owner; the Owner may not leave (a conflict with the project's one Owner).
    row(401, 404, 404, 404, 403, 403, 403, 409),
  ],
  [
    "DELETE /user/removecollab (leave: no username)",
    async () => {
      const p = await team();
      return each((as) => call("DELETE", "/user/removecollab", as, { projectID: p.projectID }));
    },
    // Non-members who see it have no membership to leave (404); the Owner may not leave.
    row(401, 404, 404, 404, 404, 404, 200, 409),
  ],
];

describe("authorization matrix: project and membership routes (behaviour.md §4, §3)", () => {
  it.each(cases)("%s", async (name, run, table) => {
    const departure = DEPARTURES[name];
    const expected = { ...table, ...departure?.cells };
    const actual = await run();
    expect(actual, departure ? `departs from behaviour.md: ${departure.why}` : "").toEqual(expected);
  });
});

describe("visibility in the lists (behaviour.md §4)", () => {
  it("Get/All, GetByStatus and GetProjects show each caller what it may see, Bearer undefined included", async () => {
    const all = [pending, reviewed, approvedAndReviewed, approvedUnreviewed].map((p) => p.projectID);
    const expected: Record<Caller, number[]> = {
      anonymous: [approvedAndReviewed.projectID],
      Base: [approvedAndReviewed.projectID],
      Blacklist: [approvedAndReviewed.projectID],
      Whitelist: [reviewed.projectID, approvedAndReviewed.projectID],
      Viewer: all,
      Admin: all,
      member: all,
      owner: all,
    };
    for (const caller of CALLERS) {
      const as = caller === "anonymous" ? undefined : user(caller);
      const seen = async (path: string) => {
        const res =
          caller === "anonymous"
            ? await client.api("GET", path, { authorization: "Bearer undefined" })
            : await call("GET", path, as);
        expectEnvelope(res, 200, `${caller} ${path}`);
        return (res.body.data as ProjectDto[])
          .map((p) => p.projectID)
          .filter((id) => all.includes(id))
          .sort((a, b) => a - b);
      };
      expected[caller].sort((a, b) => a - b);
      expect(await seen("/Project/Get/All"), `${caller} Get/All`).toEqual(expected[caller]);
      expect(await seen("/Project/GetProjects/100"), `${caller} GetProjects`).toEqual(expected[caller]);
      const approvedSeen = expected[caller].filter(
        (id) => id === approvedAndReviewed.projectID || id === approvedUnreviewed.projectID,
      );
      expect(await seen("/Project/GetByStatus/Approved"), `${caller} GetByStatus`).toEqual(approvedSeen);
    }
  });
});
