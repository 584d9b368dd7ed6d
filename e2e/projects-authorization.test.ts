import { waitFor } from "@fundraise/bus/testing";
import { confirm, createProvider, registryAt, UserStatus } from "@fundraise/contracts";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Answer, createClient } from "./client.ts";
import {
  type ChainRole,
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
// written from rules.md (§4 for projects, §3 for memberships, §8 for what it decides since: Blacklist
// is read-only, 404 before 403, no self-review); where the running system answers otherwise, the cell is
// listed in DEPARTURES with the reason, so the table stays rules.md's.
// Roles come from the chain (registry status / admin role, read at login). "member" is an accepted Editor
// of the project and "owner" its Owner, both Base users; the other callers of the first eight have no
// permission on it. The last two are Blacklist callers who belong to a project:
// - "Blacklist member": an accepted Editor of the project (a Co-Owner in the rows where a Co-Owner could
//   act: invite, remove others), Blacklisted on chain after joining, then signed in again;
// - "demoted owner": the Owner of a project of its own in the same state as the row's (its "twin"),
//   demoted to Blacklist by an admin (PATCH /user/updaterole) after adding it, then signed in again.
// Both joined or proposed while Base: a Blacklist user may neither accept an invitation nor Add (§8), so
// every project they act on is made before the demotions.
const CALLERS = [
  "anonymous",
  "Base",
  "Blacklist",
  "Whitelist",
  "Viewer",
  "Admin",
  "member",
  "owner",
  "Blacklist member",
  "demoted owner",
] as const;
type Caller = (typeof CALLERS)[number];
type Row = Record<Caller, number>;

let sys: SharedSystem;
type Client = ReturnType<typeof createClient>;
// Every user calls from an address of its own (the gateway limits requests per client IP), and sign-ups
// are split over two addresses (GetNonce, Login and Register are limited harder): users with a chain role
// on one, Base users (no chain transaction, so they may sign up beside them) on the other.
const newClient = () => createClient(() => sys);
const withChainRole = createPeople(() => sys, newClient());
const base = createPeople(() => sys, newClient());
const anonymous = newClient();
const clients = new Map<number, Client>();
const clientOf = (as: User | undefined) => (as ? clients.get(as.id) : undefined) ?? anonymous;
async function newUser(role: ChainRole): Promise<User> {
  const made = await (role === "Base" ? base : withChainRole).newUser(role);
  clients.set(made.id, newClient());
  return made;
}
const users = new Map<Caller, User>();
/** A user who is none of the callers: the one invited, and the Editor removed. */
let spare: User;
/** Projects to delete after the file (as an Admin). */
const created: number[] = [];
/**
 * Projects a row made for itself, deleted when the row ends: one proposer may have only 5 projects
 * waiting for a viewer (§8), so the owner's refused fixtures do not pile up.
 */
let scoped: number[] | null = null;

const user = (caller: Caller) => users.get(caller) as User;
const call = (method: string, path: string, as: User | undefined, body?: unknown) =>
  clientOf(as).api(method, path, {
    ...(as ? { token: as.token } : {}),
    ...(body === undefined ? {} : { body }),
  });
const row = (...statuses: number[]) => Object.fromEntries(CALLERS.map((c, i) => [c, statuses[i]])) as Row;
let counter = 0;

/** What a row acts on: `team` for every caller, unless the caller has a project of its own in the row. */
type Fixture = { team: ProjectDto } & Partial<Record<Caller, ProjectDto>>;
const at = (fixture: Fixture, caller: Caller) => fixture[caller] ?? fixture.team;

/** Removes a project as the Admin (a project already gone answers 404: nothing to do). */
async function discard(id: number) {
  const res = await call("DELETE", `/Project/Delete/${id}`, user("Admin"));
  expect([200, 404], `discard ${id}: ${JSON.stringify(res.body)}`).toContain(res.status);
}

/** Adds a project as `proposer`; it is deleted after the row (made in a row) or after the file. */
async function add(proposer: User, label: string): Promise<ProjectDto> {
  const content = newContent(`${label} ${++counter}`);
  const res = await call("POST", "/Project/Add", proposer, {
    projectName: `${label} ${counter} ${Math.random().toString(36).slice(2, 10)}`,
    fileHex: hexOf(content.file),
    imageUrl: hexOf(content.image as Buffer),
  });
  expectEnvelope(res, 201, `${label}: Add`);
  const project = res.body.data as ProjectDto;
  (scoped ?? created).push(project.projectID);
  return project;
}

async function invite(id: number, who: User, role = "Editor", by = user("owner")) {
  const res = await call("POST", "/user/invite", by, { projectID: id, username: who.username, role });
  expectEnvelope(res, 201, `invite ${who.username}`);
}

async function join(id: number, who: User, role = "Editor", by = user("owner")) {
  await invite(id, who, role, by);
  const accept = await call("PUT", "/user/invitationreply", who, { projectID: id, isAccepted: true });
  expectEnvelope(accept, 200, `${who.username} accepts`);
}

async function viewerAccepts(project: ProjectDto): Promise<ProjectDto> {
  const res = await call("PUT", `/Project/ViewerReply/${project.projectID}/true`, user("Viewer"));
  expectEnvelope(res, 200, "the viewer accepts");
  return res.body.data as ProjectDto;
}

/**
 * A project the owner proposed, with the member as an accepted Editor: Pending, not viewer-accepted
 * unless `reviewed`. `blacklistMember` joins the Blacklist member too (only before the demotions).
 */
async function team(
  options: { blacklistMember?: "Editor" | "Co-Owner"; reviewed?: boolean } = {},
): Promise<ProjectDto> {
  const project = await add(user("owner"), "matrix");
  await join(project.projectID, user("member"));
  if (options.blacklistMember) {
    await join(project.projectID, user("Blacklist member"), options.blacklistMember);
  }
  return options.reviewed ? viewerAccepts(project) : project;
}

/** A project of the demoted owner's own (made before its demotion), with `spare` as an Editor if asked. */
async function own(
  options: { reviewed?: boolean; spare?: "accepted" | "invited" } = {},
): Promise<ProjectDto> {
  const owner = user("demoted owner");
  const project = await add(owner, "demoted owner's");
  if (options.spare === "accepted") await join(project.projectID, spare, "Editor", owner);
  if (options.spare === "invited") await invite(project.projectID, spare, "Editor", owner);
  return options.reviewed ? viewerAccepts(project) : project;
}

/** A project whose hash the chain evaluated as approved (the first evaluation wins). */
async function approved(project: ProjectDto): Promise<ProjectDto> {
  await publishEvaluation(sys, project.fileHash, true);
  const status = async () =>
    ((await call("GET", `/Project/Get/${project.projectID}`, user("Admin"))).body.data as ProjectDto).status;
  await waitFor(async () => (await status()) === "Approved", 10_000, "the evaluation applied");
  return { ...project, status: "Approved" };
}

/** The role claim of a token (clients read it too, rules.md §2.13). */
const roleInToken = (token: string) =>
  (JSON.parse(Buffer.from(token.split(".")[1] as string, "base64url").toString()) as { role: string }).role;

/** Sets a registry user status from this file's chain account (nothing else of this file sends then). */
async function blacklistOnChain(address: string) {
  const provider = createProvider(sys.anvil.url, sys.anvil.chainId);
  try {
    const registry = registryAt(sys.deployment.registry, new Wallet(sys.chainAdminKey, provider));
    await confirm(registry.getFunction("editUserStatus")(address, UserStatus.Blacklisted));
  } finally {
    provider.destroy();
  }
}

/** The two demotions, then both sign in again: their tokens say Blacklist. */
async function demote() {
  await blacklistOnChain(user("Blacklist member").wallet.address);
  const demoted = user("demoted owner");
  expectEnvelope(
    await call("PATCH", `/user/updaterole/${demoted.wallet.address}/Blacklist`, user("Admin")),
    200,
    "an admin demotes the owner",
  );
  for (const caller of ["Blacklist member", "demoted owner"] as const) {
    const token = await clientOf(user(caller)).tokenOf(user(caller).wallet);
    expect(roleInToken(token), `${caller}'s new token`).toBe("Blacklist");
    users.set(caller, { ...user(caller), token });
  }
}

// Fixtures of the rows that only read or are refused: made once. Each is the team's project and the
// demoted owner's twin in the same state.
let pending: Fixture;
let reviewed: Fixture;
let approvedAndReviewed: Fixture;
let approvedUnreviewed: Fixture;
type EarlyRow =
  | "delete"
  | "deleteReviewed"
  | "invite"
  | "invitePut"
  | "removeEditor"
  | "removeInvitation"
  | "removeOwner"
  | "leave";
/** What the two Blacklist callers act on in rows that make their own projects, by row. */
const early = {} as Record<EarlyRow, Partial<Record<Caller, ProjectDto>>>;

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
    // Base until their projects are made; demoted then.
    "Blacklist member": "Base",
    "demoted owner": "Base",
  } as const;
  const made = Object.entries(roles).map(async ([caller, role]) => {
    users.set(caller as Caller, await newUser(role));
  });
  [spare] = await Promise.all([newUser("Base"), ...made]);

  // Each proposer's projects one after another, so that no more than 5 wait for a viewer at once (§8).
  const teams = async () => {
    const shared = {
      pending: await team({ blacklistMember: "Editor" }),
      reviewed: await team({ blacklistMember: "Editor", reviewed: true }),
      approvedAndReviewed: await approved(await team({ blacklistMember: "Editor", reviewed: true })),
      approvedUnreviewed: await approved(await team({ blacklistMember: "Editor" })),
    };
    const coOwner = () => team({ blacklistMember: "Co-Owner", reviewed: true });
    const removeEditor = await coOwner();
    await join(removeEditor.projectID, spare);
    const removeInvitation = await coOwner();
    await invite(removeInvitation.projectID, spare);
    const rows: Partial<Record<EarlyRow, ProjectDto>> = {
      invite: await coOwner(),
      invitePut: await coOwner(),
      removeEditor,
      removeInvitation,
      removeOwner: await coOwner(),
      leave: await team({ blacklistMember: "Editor", reviewed: true }),
    };
    return { shared, rows };
  };
  const twins = async () => {
    const shared = {
      pending: await own(),
      reviewed: await own({ reviewed: true }),
      approvedAndReviewed: await approved(await own({ reviewed: true })),
      approvedUnreviewed: await approved(await own()),
    };
    const rows: Record<EarlyRow, ProjectDto> = {
      delete: await own(),
      deleteReviewed: await own({ reviewed: true }),
      invite: await own({ reviewed: true }),
      invitePut: await own({ reviewed: true }),
      removeEditor: await own({ reviewed: true, spare: "accepted" }),
      removeInvitation: await own({ reviewed: true, spare: "invited" }),
      removeOwner: await own({ reviewed: true }),
      leave: await own({ reviewed: true }),
    };
    return { shared, rows };
  };
  const [t, o] = await Promise.all([teams(), twins()]);
  const fixture = (key: keyof typeof t.shared): Fixture => ({
    team: t.shared[key],
    "demoted owner": o.shared[key],
  });
  pending = fixture("pending");
  reviewed = fixture("reviewed");
  approvedAndReviewed = fixture("approvedAndReviewed");
  approvedUnreviewed = fixture("approvedUnreviewed");
  for (const key of Object.keys(o.rows) as EarlyRow[]) {
    const member = t.rows[key];
    early[key] = { ...(member ? { "Blacklist member": member } : {}), "demoted owner": o.rows[key] };
  }

  await demote();
});

afterAll(async () => {
  // What this file proposed does not stay in the shared system's review queue.
  if (users.get("Admin")) await Promise.all(created.map((id) => discard(id)));
});

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

/**
 * Each caller on a fixture of its own, for calls that change or remove it: made just before the call and
 * removed after it (one proposer may have only 5 projects waiting for a viewer). `given` are projects
 * made before the demotions, for the callers who act on those.
 */
async function eachFresh(
  make: () => Promise<ProjectDto>,
  send: (project: ProjectDto, as: User | undefined, caller: Caller) => Promise<Answer>,
  given: Partial<Record<Caller, ProjectDto>> = {},
): Promise<Row> {
  return each(async (as, caller) => {
    const project = given[caller] ?? (await make());
    try {
      return await send(project, as, caller);
    } finally {
      if (!given[caller]) await discard(project.projectID);
    }
  });
}

/**
 * Where the running system answers otherwise than rules.md: the cells it answers, and why. A cell
 * listed here that starts to answer rules.md's status fails the test, so the list stays true.
 */
const DEPARTURES: Record<string, { cells: Partial<Row>; why: string }> = {
  // None: "sync now" (ChangeStatus, CreateAuction, StartAuction) reads the index or the chain, and §8
  // decides what the matrix asks of Blacklist callers.
};

// Columns:                     anonymous Base Blacklist Whitelist Viewer Admin member owner  Blacklist-member demoted-owner
const cases: [string, () => Promise<Row>, Row][] = [
  // ── §4 reads: anyone; visibility decides single reads (hidden = 404) ─────────────────────────────
  [
    "GET /Project/Get/All",
    () => each((as) => call("GET", "/Project/Get/All", as)),
    row(200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/Get/All?withHex=true",
    () => each((as) => call("GET", "/Project/Get/All?withHex=true", as)),
    row(200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/Get/{id} (Pending, not viewer-accepted)",
    () => each((as, c) => call("GET", `/Project/Get/${at(pending, c).projectID}`, as)),
    row(404, 404, 404, 404, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/Get/{id} (viewer-accepted, Pending)",
    () => each((as, c) => call("GET", `/Project/Get/${at(reviewed, c).projectID}`, as)),
    row(404, 404, 404, 200, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/Get/{id} (viewer-accepted, Approved)",
    () => each((as, c) => call("GET", `/Project/Get/${at(approvedAndReviewed, c).projectID}`, as)),
    row(200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/Get/{id} (Approved, not viewer-accepted)",
    () => each((as, c) => call("GET", `/Project/Get/${at(approvedUnreviewed, c).projectID}`, as)),
    row(404, 404, 404, 404, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/Get/{id} (no such project)",
    () => each((as) => call("GET", "/Project/Get/2147483647", as)),
    row(404, 404, 404, 404, 404, 404, 404, 404, 404, 404),
  ],
  [
    "GET /Project/GetByStatus/{status}",
    () => each((as) => call("GET", "/Project/GetByStatus/approved", as)),
    row(200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/GetByStatus/{status} (not a status)",
    () => each((as) => call("GET", "/Project/GetByStatus/Done", as)),
    row(400, 400, 400, 400, 400, 400, 400, 400, 400, 400),
  ],
  [
    "GET /Project/GetProjects/{n}",
    () => each((as) => call("GET", "/Project/GetProjects/5", as)),
    row(200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/GetAllPermissioned/{withHex}",
    () => each((as) => call("GET", "/Project/GetAllPermissioned/false", as)),
    row(401, 200, 200, 200, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/GetAllInvitations",
    () => each((as) => call("GET", "/Project/GetAllInvitations", as)),
    row(401, 200, 200, 200, 200, 200, 200, 200, 200, 200),
  ],
  [
    "GET /Project/GetAllHashes/true",
    () => each((as) => call("GET", "/Project/GetAllHashes/true", as)),
    row(401, 200, 200, 200, 200, 200, 200, 200, 200, 200),
  ],
  // Reserved to a role (§8): 403 to every other role, members included.
  [
    "GET /Project/GetAllHashes/false",
    () => each((as) => call("GET", "/Project/GetAllHashes/false", as)),
    row(401, 403, 403, 403, 403, 200, 403, 403, 403, 403),
  ],
  [
    "GET /Project/ViewerPage/GetAll",
    () => each((as) => call("GET", "/Project/ViewerPage/GetAll", as)),
    row(401, 403, 403, 403, 200, 200, 403, 403, 403, 403),
  ],
  // ── §4 writes; §8: a Blacklist caller's writes are 403 whatever its membership, after 404 for a
  // project it cannot see ──────────────────────────────────────────────────────────────────────────
  [
    "POST /Project/Add",
    () =>
      each(async (as, caller) => {
        const content = newContent(`add by ${caller}`);
        const res = await call("POST", "/Project/Add", as, {
          projectName: `add by ${caller} ${Math.random().toString(36).slice(2, 10)}`,
          fileHex: hexOf(content.file),
        });
        if (res.status === 201) scoped?.push((res.body.data as ProjectDto).projectID);
        return res;
      }),
    row(401, 201, 403, 201, 201, 201, 201, 201, 403, 403),
  ],
  [
    "PUT /Project/Update (Pending, not viewer-accepted)",
    () =>
      each((as, caller) =>
        call("PUT", "/Project/Update", as, {
          projectID: at(pending, caller).projectID,
          projectName: at(pending, caller).projectName,
          projectDescription: `edited by ${caller}`,
        }),
      ),
    row(401, 404, 404, 404, 403, 403, 200, 200, 403, 403),
  ],
  [
    "PUT /Project/Update (viewer-accepted, Pending)",
    () =>
      each((as, caller) =>
        call("PUT", "/Project/Update", as, {
          projectID: at(reviewed, caller).projectID,
          projectName: at(reviewed, caller).projectName,
          projectDescription: `edited by ${caller}`,
        }),
      ),
    row(401, 404, 404, 403, 403, 403, 200, 200, 403, 403),
  ],
  [
    "PUT /Project/UpdateMarkDown/{id}/{markdown}",
    () =>
      each((as, caller) =>
        call("PUT", `/Project/UpdateMarkDown/${at(pending, caller).projectID}/by%20${caller}`, as),
      ),
    row(401, 404, 404, 404, 403, 403, 200, 200, 403, 403),
  ],
  [
    "PUT /Project/UpdateMarkDown/{id}/{markdown} (body form, viewer-accepted and Approved)",
    () =>
      each((as, caller) =>
        call("PUT", `/Project/UpdateMarkDown/${at(approvedAndReviewed, caller).projectID}/x`, as, {
          markDown: `# ${caller}`,
        }),
      ),
    row(401, 403, 403, 403, 403, 403, 200, 200, 403, 403),
  ],
  // Blacklist may never rate (403), but a project it cannot see is 404 first (§8), as for everyone: its
  // existence is not told. Member and owner are Base users, and Base rates Approved projects only.
  [
    "PUT /Project/Rate/{id}/{rating} (Pending, not viewer-accepted)",
    () => each((as, c) => call("PUT", `/Project/Rate/${at(pending, c).projectID}/3`, as)),
    row(401, 404, 404, 404, 200, 200, 403, 403, 403, 403),
  ],
  [
    "PUT /Project/Rate/{id}/{rating} (viewer-accepted, Pending)",
    () => each((as, c) => call("PUT", `/Project/Rate/${at(reviewed, c).projectID}/3`, as)),
    row(401, 404, 404, 200, 200, 200, 403, 403, 403, 403),
  ],
  [
    "PUT /Project/Rate/{id}/{rating} (no such project)",
    () => each((as) => call("PUT", "/Project/Rate/2147483647/3", as)),
    row(401, 404, 404, 404, 404, 404, 404, 404, 404, 404),
  ],
  [
    "PUT /Project/Rate/{id}/{rating} (viewer-accepted, Approved)",
    () => each((as, c) => call("PUT", `/Project/Rate/${at(approvedAndReviewed, c).projectID}/3`, as)),
    row(401, 200, 403, 200, 200, 200, 200, 200, 403, 403),
  ],
  [
    "PUT /Project/ChangeStatus/{id}",
    () => each((as, c) => call("PUT", `/Project/ChangeStatus/${at(pending, c).projectID}`, as)),
    row(401, 404, 404, 404, 200, 200, 200, 200, 403, 403),
  ],
  [
    "PUT /Project/CreateAuction/{id}",
    () => each((as, c) => call("PUT", `/Project/CreateAuction/${at(pending, c).projectID}`, as)),
    row(401, 404, 404, 404, 403, 403, 200, 200, 403, 403),
  ],
  [
    "PUT /Project/StartAuction/{id}",
    () => each((as, c) => call("PUT", `/Project/StartAuction/${at(pending, c).projectID}`, as)),
    row(401, 404, 404, 404, 403, 403, 200, 200, 403, 403),
  ],
  // Reserved to Viewer and Admin (§8): 403 to the others before the project is looked at. The two
  // Blacklist callers are refused on a project they belong to (nothing fresh needed: nothing changes).
  [
    "PUT /Project/ViewerReply/{id}/true",
    () =>
      eachFresh(team, (p, as) => call("PUT", `/Project/ViewerReply/${p.projectID}/true`, as), {
        "Blacklist member": pending.team,
        "demoted owner": pending["demoted owner"],
      }),
    row(401, 403, 403, 403, 200, 200, 403, 403, 403, 403),
  ],
  [
    "PUT /Project/ViewerReply/{id}/false",
    () =>
      eachFresh(team, (p, as) => call("PUT", `/Project/ViewerReply/${p.projectID}/false`, as), {
        "Blacklist member": pending.team,
        "demoted owner": pending["demoted owner"],
      }),
    row(401, 403, 403, 403, 200, 200, 403, 403, 403, 403),
  ],
  [
    "PUT /Project/ViewerReply/{id}/true (already viewer-accepted)",
    () => each((as, c) => call("PUT", `/Project/ViewerReply/${at(reviewed, c).projectID}/true`, as)),
    row(401, 403, 403, 403, 409, 409, 403, 403, 403, 403),
  ],
  [
    "PUT /Project/ViewerReply/{id}/true (no such project)",
    () => each((as) => call("PUT", "/Project/ViewerReply/2147483647/true", as)),
    row(401, 403, 403, 403, 404, 404, 403, 403, 403, 403),
  ],
  // The Blacklist member is an Editor (403 as any Editor); the demoted owner deletes its own twin.
  [
    "DELETE /Project/Delete/{id}",
    () =>
      eachFresh(team, (p, as) => call("DELETE", `/Project/Delete/${p.projectID}`, as), {
        "Blacklist member": pending.team,
        ...early.delete,
      }),
    row(401, 404, 404, 404, 403, 200, 403, 200, 403, 403),
  ],
  [
    "DELETE /Project/Delete/{id} (viewer-accepted)",
    () =>
      eachFresh(
        () => team({ reviewed: true }),
        (p, as) => call("DELETE", `/Project/Delete/${p.projectID}`, as),
        { "Blacklist member": reviewed.team, ...early.deleteReviewed },
      ),
    row(401, 404, 404, 403, 403, 200, 403, 200, 403, 403),
  ],
  // ── §3 membership rows (the Blacklist member is a Co-Owner where a Co-Owner could act) ────────────
  [
    "POST /user/invite",
    async () => {
      const f: Fixture = { team: await team(), ...early.invite };
      return each((as, c) =>
        call("POST", "/user/invite", as, { projectID: at(f, c).projectID, username: spare.username }),
      );
    },
    row(401, 404, 404, 404, 403, 403, 403, 201, 403, 403),
  ],
  [
    "PUT /user/invite (the web client's verb)",
    async () => {
      const f: Fixture = { team: await team(), ...early.invitePut };
      return each((as, c) =>
        call("PUT", "/user/invite", as, {
          projectID: at(f, c).projectID,
          username: spare.username,
          role: "Co-Owner",
        }),
      );
    },
    row(401, 404, 404, 404, 403, 403, 403, 201, 403, 403),
  ],
  [
    "POST /user/invite (no such project)",
    () => each((as) => call("POST", "/user/invite", as, { projectID: 2147483647, username: spare.username })),
    row(401, 404, 404, 404, 404, 404, 404, 404, 404, 404),
  ],
  // Each caller except member and owner (who are in) is invited; the two Blacklist callers are invited
  // to this project too. Blacklist may decline (§8), not accept.
  [
    "PUT /user/invitationreply (decline)",
    async () => {
      const p = await team();
      for (const caller of CALLERS.slice(1).filter((c) => c !== "member" && c !== "owner")) {
        await invite(p.projectID, user(caller));
      }
      return each((as) =>
        call("PUT", "/user/invitationreply", as, { projectID: p.projectID, isAccepted: false }),
      );
    },
    row(401, 200, 200, 200, 200, 200, 404, 404, 200, 200),
  ],
  [
    "POST /user/invitationreply (the web client's verb and body; accept)",
    async () => {
      const p = await team();
      for (const caller of CALLERS.slice(1).filter((c) => c !== "member" && c !== "owner")) {
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
    row(401, 200, 403, 200, 200, 200, 404, 404, 403, 403),
  ],
  [
    "GET /user/getcoowners/{projectID}",
    () => each((as, c) => call("GET", `/user/getcoowners/${at(pending, c).projectID}`, as)),
    row(401, 404, 404, 404, 403, 200, 200, 200, 200, 200),
  ],
  [
    "GET /user/getcoowners/{projectID} (viewer-accepted and Approved)",
    () => each((as, c) => call("GET", `/user/getcoowners/${at(approvedAndReviewed, c).projectID}`, as)),
    row(401, 403, 403, 403, 403, 200, 200, 200, 200, 200),
  ],
  [
    "DELETE /user/removecollab (an Editor)",
    async () => {
      const p = await team();
      await join(p.projectID, spare);
      const f: Fixture = { team: p, ...early.removeEditor };
      return each((as, c) =>
        call("DELETE", "/user/removecollab", as, { projectID: at(f, c).projectID, username: spare.username }),
      );
    },
    row(401, 404, 404, 404, 403, 403, 403, 200, 403, 403),
  ],
  [
    "DELETE /user/removecollab (a pending invitation)",
    async () => {
      const p = await team();
      await invite(p.projectID, spare);
      const f: Fixture = { team: p, ...early.removeInvitation };
      return each((as, c) =>
        call("DELETE", "/user/removecollab", as, { projectID: at(f, c).projectID, username: spare.username }),
      );
    },
    row(401, 404, 404, 404, 403, 403, 403, 200, 403, 403),
  ],
  [
    "DELETE /user/removecollab (the Owner)",
    async () => {
      const f: Fixture = { team: await team(), ...early.removeOwner };
      return each((as, c) =>
        call("DELETE", "/user/removecollab", as, {
          projectID: at(f, c).projectID,
          username: user(c === "demoted owner" ? "demoted owner" : "owner").username,
        }),
      );
    },
    // Nobody removes the Owner; the Owner may not leave (a conflict with the project's one Owner). A
    // Blacklist Co-Owner may not remove others at all (403); the demoted owner naming itself is an Owner
    // leaving, which §8 does not leave to a Blacklist caller (403).
    row(401, 404, 404, 404, 403, 403, 403, 409, 403, 403),
  ],
  [
    "DELETE /user/removecollab (leave: no username)",
    async () => {
      const f: Fixture = { team: await team(), ...early.leave };
      return each((as, c) => call("DELETE", "/user/removecollab", as, { projectID: at(f, c).projectID }));
    },
    // Non-members who see it have no membership to leave (404); the Owner may not leave. A Blacklist
    // member may leave (§8), a Blacklist Owner may not ("not as Owner": 403).
    row(401, 404, 404, 404, 404, 404, 200, 409, 200, 403),
  ],
];

describe("authorization matrix: project and membership routes (rules.md §4, §3, §8)", () => {
  it.each(cases)("%s", async (name, run, table) => {
    const departure = DEPARTURES[name];
    const expected = { ...table, ...departure?.cells };
    scoped = [];
    try {
      const actual = await run();
      expect(actual, departure ? `departs from rules.md: ${departure.why}` : "").toEqual(expected);
    } finally {
      const made = scoped;
      scoped = null;
      await Promise.all(made.map((id) => discard(id)));
    }
  });
});

describe("visibility in the lists (rules.md §4.2)", () => {
  it("Get/All, GetByStatus and GetProjects show each caller what it may see, Bearer undefined included", async () => {
    const fixtures = [pending, reviewed, approvedAndReviewed, approvedUnreviewed];
    const teams = fixtures.map((f) => f.team.projectID);
    const twins = fixtures.map((f) => (f["demoted owner"] as ProjectDto).projectID);
    const all = [...teams, ...twins];
    const both = (f: Fixture) => [f.team.projectID, (f["demoted owner"] as ProjectDto).projectID];
    const expected: Record<Caller, number[]> = {
      anonymous: both(approvedAndReviewed),
      Base: both(approvedAndReviewed),
      Blacklist: both(approvedAndReviewed),
      Whitelist: [...both(reviewed), ...both(approvedAndReviewed)],
      Viewer: all,
      Admin: all,
      member: [...teams, approvedAndReviewed["demoted owner"]?.projectID as number],
      owner: [...teams, approvedAndReviewed["demoted owner"]?.projectID as number],
      "Blacklist member": [...teams, approvedAndReviewed["demoted owner"]?.projectID as number],
      "demoted owner": [...twins, approvedAndReviewed.team.projectID],
    };
    const approvedIds = [...both(approvedAndReviewed), ...both(approvedUnreviewed)];
    for (const caller of CALLERS) {
      const as = caller === "anonymous" ? undefined : user(caller);
      const seen = async (path: string) => {
        const res =
          caller === "anonymous"
            ? await anonymous.api("GET", path, { authorization: "Bearer undefined" })
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
      const approvedSeen = expected[caller].filter((id) => approvedIds.includes(id));
      expect(await seen("/Project/GetByStatus/Approved"), `${caller} GetByStatus`).toEqual(approvedSeen);
    }
  });
});
