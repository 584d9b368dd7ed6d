import { waitFor } from "@fundraise/bus/testing";
import {
  confirm,
  createProvider,
  type RegistryContract,
  registryAt,
  UserStatus,
  waitForReceipt,
  withRunner,
} from "@fundraise/contracts";
import { type JsonRpcProvider, parseEther, Wallet } from "ethers";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Answer, createClient } from "./client.ts";
import {
  type ChainRole,
  createPeople,
  expectEnvelope,
  hexOf,
  identityOf,
  isPinned,
  newContent,
  type ProjectDto,
  publishEvaluation,
  type User,
} from "./projects-kit.ts";
import { type SharedSystem, sharedSystem } from "./shared.ts";

// rules.md §8's decisions about projects, other than the authorization matrix's cells
// (projects-authorization.test.ts): a new file is a new proposal, a fair review queue, no self-review,
// co-owners' e-mails, 404 before 403 on writes, and what a Blacklist user may still do. Each answer is
// checked whole: the status, the envelope, and the fields that matter. The web client's exact requests
// are sent where it makes them: PascalCase keys, PUT /User/Invite/, POST
// /User/InvitationReply, trailing slashes. Every user is new to this file (fresh proposers), and what the
// file proposed is deleted at the end (as an Admin), so the shared review queue stays small.
let sys: SharedSystem;
type Client = ReturnType<typeof createClient>;
const newClient = () => createClient(() => sys);
// Each user calls from an address of its own (the gateway limits requests per client IP). Sign-ups (limited
// harder) are spread: users with a chain role on one address (their chain transactions go one at a time),
// Base users (no chain transaction) over two others.
const withChainRole = createPeople(() => sys, newClient());
const base = [createPeople(() => sys, newClient()), createPeople(() => sys, newClient())];
const anonymous = newClient();
const clients = new Map<number, Client>();
let baseCount = 0;
async function newUser(role: ChainRole): Promise<User> {
  const people = role === "Base" ? (base[baseCount++ % base.length] as (typeof base)[number]) : withChainRole;
  const made = await people.newUser(role);
  clients.set(made.id, newClient());
  return made;
}
const call = (method: string, path: string, as: User | undefined, body?: unknown) =>
  ((as && clients.get(as.id)) || anonymous).api(method, path, {
    ...(as ? { token: as.token } : {}),
    ...(body === undefined ? {} : { body }),
  });
const dto = (res: Answer) => res.body.data as ProjectDto;
const ids = (res: Answer) => (res.body.data as ProjectDto[]).map((p) => p.projectID);
const unique = (label: string) => `${label} ${Math.random().toString(36).slice(2, 10)}`;
const MISSING = 2147483647;

/** Users every section shares (none of them proposes anything). */
let admin: User;
let viewer: User;
let whitelisted: User;
let outsider: User;
let blacklisted: User;
const created: number[] = [];

beforeAll(async () => {
  sys = await sharedSystem();
  [admin, viewer, whitelisted, outsider, blacklisted] = await Promise.all([
    newUser("Admin"),
    newUser("Viewer"),
    newUser("Whitelist"),
    newUser("Base"),
    newUser("Blacklist"),
  ]);
});

afterAll(async () => {
  if (admin) await Promise.all(created.map((id) => call("DELETE", `/Project/Delete/${id}`, admin)));
});

/**
 * The Apply page's Add: `{fileHex, projectName, projectDescription, imageUrl: <image hex>}` (lower-case
 * hex, no 0x), or the same with PascalCase keys.
 */
async function propose(proposer: User, label: string, options: { pascal?: boolean } = {}) {
  const content = newContent(label);
  const name = unique(label);
  const body = options.pascal
    ? {
        FileHex: hexOf(content.file),
        ProjectName: name,
        ProjectDescription: `About ${label}`,
        ImageUrl: hexOf(content.image as Buffer),
      }
    : {
        fileHex: hexOf(content.file),
        projectName: name,
        projectDescription: `About ${label}`,
        imageUrl: hexOf(content.image as Buffer),
      };
  const res = await call("POST", "/Project/Add", proposer, body);
  expectEnvelope(res, 201, `${label}: Add`);
  created.push(dto(res).projectID);
  return { project: dto(res), content, name };
}

async function viewerAccepts(id: number, as = viewer): Promise<ProjectDto> {
  const res = await call("PUT", `/Project/ViewerReply/${id}/true`, as);
  expectEnvelope(res, 200, "the viewer accepts");
  return dto(res);
}

/** A ProjectEvaluation of the hash, as the chain-indexer publishes it; waits until the project has it. */
async function approved(id: number, fileHash: string): Promise<ProjectDto> {
  await publishEvaluation(sys, fileHash, true);
  const read = async () => dto(await call("GET", `/Project/Get/${id}`, admin));
  await waitFor(async () => (await read()).status === "Approved", 10_000, `project ${id} Approved`);
  return read();
}

/** The web client's invitation: PUT /User/Invite/, then the invitee's POST /User/InvitationReply. */
async function joinAs(owner: User, id: number, who: User, role: "Editor" | "Co-Owner") {
  const invite = await call("PUT", "/User/Invite/", owner, { projectID: id, username: who.username, role });
  expectEnvelope(invite, 201, `invite ${who.username}`);
  const reply = await call("POST", "/User/InvitationReply", who, {
    projectID: id,
    Username: who.username,
    Role: "Editor",
    IsAccepted: true,
  });
  expectEnvelope(reply, 200, `${who.username} accepts`);
}

/** The ids of the projects `as` sees in each public list (anonymous: the web client's Bearer undefined). */
async function listed(as: User | undefined, id: number) {
  const seen: Record<string, boolean> = {};
  for (const path of ["/Project/Get/All", "/Project/GetByStatus/Approved", "/Project/GetProjects/10"]) {
    const res = as
      ? await call("GET", path, as)
      : await anonymous.api("GET", path, { authorization: "Bearer undefined" });
    expectEnvelope(res, 200, path);
    seen[path] = ids(res).includes(id);
  }
  return seen;
}
const everywhere = (value: boolean) => ({
  "/Project/Get/All": value,
  "/Project/GetByStatus/Approved": value,
  "/Project/GetProjects/10": value,
});

describe("a new file is a new proposal (rules.md §8.4)", () => {
  let proposer: User;
  beforeAll(async () => {
    proposer = await newUser("Base");
  });

  it("Update with a new FileHex: the new hash, Pending, not viewer-accepted, out of the public lists and back in the viewer queue; an evaluation of the new hash approves it again", async () => {
    const { project, name } = await propose(proposer, "second version");
    const id = project.projectID;
    await viewerAccepts(id);
    const before = await approved(id, project.fileHash);
    expect(before).toMatchObject({ status: "Approved", viewerAccepted: true });
    // Rated, so that it is in the top 10 of GetProjects before the Update.
    expectEnvelope(await call("PUT", `/Project/Rate/${id}/5`, outsider), 200, "rate");
    expect(await listed(undefined, id), "anonymous, before").toEqual(everywhere(true));
    expect(await listed(outsider, id), "Base, before").toEqual(everywhere(true));

    // The Profile page's Update (PascalCase, trailing slash), with a new file.
    const content = newContent("second version, new file", false);
    const { fileHash } = await identityOf(content);
    const res = await call("PUT", "/Project/Update/", proposer, {
      ProjectID: id,
      ProjectName: name,
      ProjectDescription: "The second version",
      FileHex: hexOf(content.file),
    });
    expectEnvelope(res, 200, "Update with FileHex");
    // Soft until the re-evaluation: each consequence of the new file is reported.
    expect.soft(dto(res)).toMatchObject({
      projectID: id,
      projectName: name,
      projectDescription: "The second version",
      fileHash,
      imageUrl: null,
      proposerAddress: proposer.wallet.address,
      // No evaluation of the new hash exists: Pending; the new file waits for a viewer again.
      status: "Pending",
      viewerAccepted: false,
      viewerAcceptedAddress: null,
    });
    expect.soft(dto(await call("GET", `/Project/Get/${id}`, proposer))).toEqual(dto(res));

    // It leaves the public lists, and single reads are 404 to whoever may not see it now.
    expect.soft(await listed(undefined, id), "anonymous, after").toEqual(everywhere(false));
    expect.soft(await listed(outsider, id), "Base, after").toEqual(everywhere(false));
    const hidden = {
      anonymous: (await anonymous.api("GET", `/Project/Get/${id}`, { authorization: "Bearer undefined" }))
        .status,
      Base: (await call("GET", `/Project/Get/${id}`, outsider)).status,
      Whitelist: (await call("GET", `/Project/Get/${id}`, whitelisted)).status,
    };
    expect.soft(hidden).toEqual({ anonymous: 404, Base: 404, Whitelist: 404 });
    const queue = await call("GET", "/Project/ViewerPage/GetAll", viewer);
    expectEnvelope(queue, 200);
    expect.soft(ids(queue), "the viewer queue").toContain(id);

    // An evaluation of the NEW hash decides its status; it stays out of the public lists until a viewer
    // accepts it again.
    const reevaluated = await approved(id, fileHash);
    expect(reevaluated).toMatchObject({ fileHash, status: "Approved", viewerAccepted: false });
    expect(await listed(undefined, id), "anonymous, approved but not reviewed").toEqual(everywhere(false));
    const accepted = await viewerAccepts(id);
    expect(accepted).toMatchObject({
      status: "Approved",
      viewerAccepted: true,
      viewerAcceptedAddress: viewer.wallet.address,
    });
    expect((await listed(undefined, id))["/Project/Get/All"], "anonymous, reviewed again").toBe(true);
  });

  it("changing only the name, description and markdown keeps Approved and viewerAccepted", async () => {
    const { project } = await propose(proposer, "same file", { pascal: true });
    const id = project.projectID;
    await viewerAccepts(id);
    const before = await approved(id, project.fileHash);
    const renamed = unique("same file, renamed");
    // The Profile page's form.
    const profile = await call("PUT", "/Project/Update/", proposer, {
      ProjectID: id,
      ProjectName: renamed,
      ProjectDescription: "Renamed",
    });
    expectEnvelope(profile, 200);
    expect(dto(profile)).toEqual({ ...before, projectName: renamed, projectDescription: "Renamed" });
    // The Project info page's form: the record it read, sent back with its changes (fileHash included).
    const info = await call("PUT", "/Project/Update/", proposer, {
      projectID: id,
      projectName: renamed,
      projectDescription: "Renamed",
      imageUrl: before.imageUrl,
      rating: before.rating,
      status: before.status,
      markDown: "## Plan",
      fileHash: before.fileHash,
    });
    expectEnvelope(info, 200);
    expect(dto(info)).toEqual({
      ...before,
      projectName: renamed,
      projectDescription: "Renamed",
      markDown: "## Plan",
    });
    const markdown = await call("PUT", `/Project/UpdateMarkDown/${id}/%23%20Plan%20B`, proposer);
    expectEnvelope(markdown, 200);
    expect(dto(markdown)).toEqual({ ...dto(info), markDown: "# Plan B" });
    const publicRead = await anonymous.api("GET", `/Project/Get/${id}`, {
      authorization: "Bearer undefined",
    });
    expectEnvelope(publicRead, 200);
    expect(dto(publicRead)).toMatchObject({ status: "Approved", viewerAccepted: true });
  });

  it("when an evaluation of the new hash is already on chain, the Update answers that evaluation's status", async () => {
    const { project, name } = await propose(proposer, "evaluated first");
    const id = project.projectID;
    await viewerAccepts(id);
    const content = newContent("evaluated first, new file", false);
    const { fileHash } = await identityOf(content);
    const projectHash = `0x${fileHash.toLowerCase()}`;
    // The new file's hash is registered and approved on chain before any project holds it.
    await approveOnChain(projectHash);
    await expect
      .poll(
        async () => {
          const logs = (await anonymous.api("GET", "/EventDebug/Debug")).body.data as {
            event: { projectHash: string; isApproved: boolean };
          }[];
          return logs.some((l) => l.event.projectHash.toLowerCase() === projectHash && l.event.isApproved);
        },
        { timeout: 20_000, interval: 100 },
      )
      .toBe(true);
    // Indexed; then the indexer's fact reaches the projects service over the bus, which records it in its ledger.
    const db = new pg.Pool({ connectionString: sys.databaseUrl, max: 1 });
    try {
      await waitFor(
        async () =>
          (
            await db.query(
              `select 1 from projects.chain_fact where project_hash = $1 and kind = 'evaluation' and not retracted`,
              [fileHash.toUpperCase()],
            )
          ).rows.length > 0,
        20_000,
        "the evaluation in the projects service's ledger",
      );
    } finally {
      await db.end();
    }

    const res = await call("PUT", "/Project/Update/", proposer, {
      ProjectID: id,
      ProjectName: name,
      FileHex: hexOf(content.file),
    });
    expectEnvelope(res, 200, "Update with FileHex");
    expect(dto(res)).toMatchObject({
      projectID: id,
      fileHash,
      status: "Approved",
      viewerAccepted: false,
      viewerAcceptedAddress: null,
    });
    expect(dto(await call("GET", `/Project/Get/${id}`, admin))).toEqual(dto(res));
  }, 120_000);
});

describe("a fair review queue: 5 waiting projects per proposer (rules.md §8.8)", () => {
  let proposer: User;
  let other: User;
  beforeAll(async () => {
    [proposer, other] = await Promise.all([newUser("Base"), newUser("Base")]);
  });

  it("the 6th Add is 429 saying so, nothing written; another proposer is unaffected; a viewer's acceptance makes room for one", async () => {
    const waiting: number[] = [];
    for (let i = 1; i <= 5; i++) {
      waiting.push((await propose(proposer, `queue share ${i}`, { pascal: i % 2 === 0 })).project.projectID);
    }
    const mine = async () => {
      const res = await call("GET", "/Project/GetAllPermissioned/false", proposer);
      expectEnvelope(res, 200);
      return ids(res).sort((a, b) => a - b);
    };
    expect(await mine()).toEqual(waiting);

    const sixth = newContent("queue share 6");
    const refused = await call("POST", "/Project/Add", proposer, {
      fileHex: hexOf(sixth.file),
      projectName: unique("queue share 6"),
      projectDescription: "One too many",
      imageUrl: hexOf(sixth.image as Buffer),
    });
    if (refused.status === 201) created.push(dto(refused).projectID);
    expectEnvelope(refused, 429, "the 6th Add");
    // The message says why: this proposer's 5 projects wait for a viewer.
    expect(refused.body.message).toMatch(/\b5\b/);
    expect(refused.body.message).toMatch(/wait|review|viewer/i);
    expect(await mine()).toEqual(waiting);
    await expect
      .poll(async () => isPinned(sys.ipfsUrl as string, (await identityOf(sixth)).cid), { timeout: 5_000 })
      .toBe(false);

    // Another proposer's Add is not held back by this one's share.
    await propose(other, "another proposer");

    // A viewer accepts one: room for exactly one more.
    await viewerAccepts(waiting[0] as number);
    const next = await propose(proposer, "queue share, after a review", { pascal: true });
    expect(next.project).toMatchObject({ status: "Pending", viewerAccepted: false });
    const again = newContent("queue share, one too many again");
    const refusedAgain = await call("POST", "/Project/Add", proposer, {
      FileHex: hexOf(again.file),
      ProjectName: unique("queue share, again"),
    });
    if (refusedAgain.status === 201) created.push(dto(refusedAgain).projectID);
    expectEnvelope(refusedAgain, 429, "the cap again");
  });
});

describe("no self-review (rules.md §8.9)", () => {
  let viewerProposer: User;
  let adminProposer: User;
  let owner: User;
  beforeAll(async () => {
    [viewerProposer, adminProposer, owner] = await Promise.all([
      newUser("Viewer"),
      newUser("Admin"),
      newUser("Base"),
    ]);
  });

  /** Both replies by each reviewer who belongs to the project: all 403, and the projects unchanged. */
  async function refusedReviews(cases: [ProjectDto, User[]][]) {
    const read = async (p: ProjectDto) => dto(await call("GET", `/Project/Get/${p.projectID}`, admin));
    const before = await Promise.all(cases.map(([p]) => read(p)));
    const answers: Record<string, number> = {};
    for (const [project, reviewers] of cases) {
      for (const reviewer of reviewers) {
        for (const reply of ["true", "false"]) {
          const res = await call("PUT", `/Project/ViewerReply/${project.projectID}/${reply}`, reviewer);
          answers[`${project.projectName}: ${reviewer.username} ${reply}`] = res.status;
          expectEnvelope(res, res.status);
        }
      }
    }
    expect(answers).toEqual(Object.fromEntries(Object.keys(answers).map((k) => [k, 403])));
    for (const [i, [project]] of cases.entries()) {
      const after = await call("GET", `/Project/Get/${project.projectID}`, admin);
      expectEnvelope(after, 200, "the project is still there");
      expect(dto(after)).toEqual(before[i]);
      expect(before[i]).toMatchObject({ viewerAccepted: false, viewerAcceptedAddress: null });
    }
  }

  it("a Viewer and an Admin cannot review a project they proposed (its Owner)", async () => {
    const byViewer = (await propose(viewerProposer, "proposed by a viewer")).project;
    const byAdmin = (await propose(adminProposer, "proposed by an admin")).project;
    await refusedReviews([
      [byViewer, [viewerProposer]],
      [byAdmin, [adminProposer]],
    ]);
  });

  it("a Viewer and an Admin who are accepted Editors cannot review it", async () => {
    const { project } = await propose(owner, "reviewers as editors");
    await joinAs(owner, project.projectID, viewerProposer, "Editor");
    await joinAs(owner, project.projectID, adminProposer, "Editor");
    await refusedReviews([[project, [viewerProposer, adminProposer]]]);
  });

  it("a Viewer or an Admin who is not a member reviews as before", async () => {
    const { project } = await propose(owner, "reviewed by others");
    await joinAs(owner, project.projectID, viewerProposer, "Editor");
    const accepted = await viewerAccepts(project.projectID, viewer);
    expect(accepted).toMatchObject({
      projectID: project.projectID,
      viewerAccepted: true,
      viewerAcceptedAddress: viewer.wallet.address,
    });
    const rejected = (await propose(owner, "rejected by an admin")).project;
    const res = await call("PUT", `/Project/ViewerReply/${rejected.projectID}/false`, admin);
    expectEnvelope(res, 200);
    expect(res.body.data).toBeNull();
    expectEnvelope(await call("GET", `/Project/Get/${rejected.projectID}`, admin), 404);
  });
});

describe("co-owners' e-mails (rules.md §8.10)", () => {
  it("getcoowners gives mailAddress to an Admin for every row, to others only on their own row", async () => {
    const [owner, coOwner, editor] = await Promise.all([newUser("Base"), newUser("Base"), newUser("Base")]);
    const { project } = await propose(owner, "co-owners");
    const id = project.projectID;
    await joinAs(owner, id, coOwner, "Co-Owner");
    await joinAs(owner, id, editor, "Editor");
    const mailOf = async (who: User) => {
      const res = await call("GET", "/user/get", who);
      expectEnvelope(res, 200);
      return (res.body.data as { mailAddress: string }).mailAddress;
    };
    const mails = new Map([
      [owner.id, await mailOf(owner)],
      [coOwner.id, await mailOf(coOwner)],
    ]);
    type Row = { id: number; username: string; mailAddress: string | null };
    const rows = async (as: User) => {
      const res = await call("GET", `/user/getcoowners/${id}`, as);
      expectEnvelope(res, 200, `getcoowners as ${as.username}`);
      return (res.body.data as Row[]).sort((a, b) => a.id - b.id);
    };

    // The Admin (not a member) sees every row whole.
    const full = await rows(admin);
    expect(full.map((r) => r.username)).toEqual(
      [owner, coOwner].sort((a, b) => a.id - b.id).map((u) => u.username),
    );
    for (const row of full) expect(row.mailAddress, row.username).toBe(mails.get(row.id));
    const masked = (self: User | null) =>
      full.map((r) => (r.id === self?.id ? r : { ...r, mailAddress: null }));
    expect.soft(await rows(owner), "the Owner").toEqual(masked(owner));
    expect.soft(await rows(coOwner), "the Co-Owner").toEqual(masked(coOwner));
    expect.soft(await rows(editor), "an Editor").toEqual(masked(null));
  });
});

describe("404 before 403 on writes (rules.md §8.11)", () => {
  let owner: User;
  /** Pending and not viewer-accepted; viewer-accepted but Pending; Approved but not viewer-accepted. */
  const hidden: Record<string, ProjectDto> = {};
  beforeAll(async () => {
    owner = await newUser("Base");
    hidden.pending = (await propose(owner, "hidden pending")).project;
    const reviewed = (await propose(owner, "hidden reviewed")).project;
    hidden.reviewed = await viewerAccepts(reviewed.projectID);
    const unreviewed = (await propose(owner, "hidden approved")).project;
    hidden.approvedUnreviewed = await approved(unreviewed.projectID, unreviewed.fileHash);
  });

  /** Writes naming project `id`, the web client's forms where it has them. */
  const writes = (id: number, as: User): [string, () => Promise<Answer>][] => [
    ["Rate", () => call("PUT", `/Project/Rate/${id}/3`, as)],
    [
      "Update (the Profile form)",
      () =>
        call("PUT", "/Project/Update/", as, {
          ProjectID: id,
          ProjectName: unique("taken over"),
          ProjectDescription: "mine now",
        }),
    ],
    ["UpdateMarkDown", () => call("PUT", `/Project/UpdateMarkDown/${id}/mine%20now`, as)],
    ["Delete", () => call("DELETE", `/Project/Delete/${id}`, as)],
    [
      "PUT /User/Invite/",
      () =>
        call("PUT", "/User/Invite/", as, {
          projectID: id,
          username: (as === outsider ? blacklisted : outsider).username,
          role: "Editor",
        }),
    ],
    ["ChangeStatus", () => call("PUT", `/Project/ChangeStatus/${id}`, as)],
    ["CreateAuction", () => call("PUT", `/Project/CreateAuction/${id}`, as)],
    ["StartAuction", () => call("PUT", `/Project/StartAuction/${id}`, as)],
    [
      "removecollab",
      () => call("DELETE", "/user/removecollab", as, { projectID: id, username: owner.username }),
    ],
    ["getcoowners", () => call("GET", `/user/getcoowners/${id}`, as)],
  ];

  it("a Blacklist and a Base user get 404 on every write to a project they cannot see, the same answer as for no project; nothing changes", async () => {
    const before = Object.fromEntries(
      await Promise.all(
        Object.entries(hidden).map(async ([k, p]) => [
          k,
          dto(await call("GET", `/Project/Get/${p.projectID}`, owner)),
        ]),
      ),
    );
    const statuses: Record<string, number> = {};
    const notTheMissingAnswer: string[] = [];
    for (const [who, as] of [
      ["Blacklist", blacklisted],
      ["Base", outsider],
    ] as const) {
      const missing = new Map<string, Answer>();
      for (const [route, send] of writes(MISSING, as)) {
        const res = await send();
        missing.set(route, res);
        statuses[`${who} ${route} (no such project)`] = res.status;
        expectEnvelope(res, res.status);
      }
      for (const [kind, project] of Object.entries(hidden)) {
        for (const [route, send] of writes(project.projectID, as)) {
          const res = await send();
          statuses[`${who} ${route} (${kind})`] = res.status;
          expectEnvelope(res, res.status);
          // Existence is not told: the same answer as for a project that does not exist.
          if (res.status === 404 && JSON.stringify(res.body) !== JSON.stringify(missing.get(route)?.body)) {
            notTheMissingAnswer.push(`${who} ${route} (${kind}): ${JSON.stringify(res.body)}`);
          }
        }
      }
    }
    // Soft: the answers, the messages and the projects are each reported.
    expect.soft(statuses).toEqual(Object.fromEntries(Object.keys(statuses).map((k) => [k, 404])));
    expect.soft(notTheMissingAnswer).toEqual([]);
    for (const [kind, project] of Object.entries(hidden)) {
      expect(dto(await call("GET", `/Project/Get/${project.projectID}`, owner)), kind).toEqual(before[kind]);
    }
  });

  it("routes reserved to a role answer 403 to the other roles before looking at the project", async () => {
    const statuses: Record<string, number> = {};
    for (const [who, as] of [
      ["Blacklist", blacklisted],
      ["Base", outsider],
      ["Whitelist", whitelisted],
      ["Owner", owner],
    ] as const) {
      for (const [kind, id] of [
        ["hidden", hidden.pending?.projectID],
        ["no such project", MISSING],
      ] as const) {
        for (const reply of ["true", "false"]) {
          const res = await call("PUT", `/Project/ViewerReply/${id}/${reply}`, as);
          expectEnvelope(res, res.status);
          statuses[`${who} ViewerReply/${reply} (${kind})`] = res.status;
        }
      }
      statuses[`${who} ViewerPage`] = (await call("GET", "/Project/ViewerPage/GetAll", as)).status;
      statuses[`${who} GetAllHashes/false`] = (await call("GET", "/Project/GetAllHashes/false", as)).status;
    }
    expect(statuses).toEqual(Object.fromEntries(Object.keys(statuses).map((k) => [k, 403])));
  });
});

describe("Blacklist is read-only (rules.md §8.1): what a demoted member may and may not do", () => {
  let owner: User;
  let member: User;
  let joined: ProjectDto;
  let invitedTo: ProjectDto;
  let declined: ProjectDto;
  beforeAll(async () => {
    [owner, member] = await Promise.all([newUser("Base"), newUser("Base")]);
    joined = (await propose(owner, "blacklist: joined")).project;
    await joinAs(owner, joined.projectID, member, "Editor");
    invitedTo = (await propose(owner, "blacklist: invited")).project;
    declined = (await propose(owner, "blacklist: declined")).project;
    for (const p of [invitedTo, declined]) {
      expectEnvelope(
        await call("PUT", "/User/Invite/", owner, { projectID: p.projectID, username: member.username }),
        201,
      );
    }
    // An admin demotes the member; it signs in again, and its token says Blacklist.
    expectEnvelope(await call("PATCH", `/user/updaterole/${member.wallet.address}/Blacklist`, admin), 200);
    const token = await (clients.get(member.id) as Client).tokenOf(member.wallet);
    const claims = JSON.parse(Buffer.from(token.split(".")[1] as string, "base64url").toString());
    expect(claims.role).toBe("Blacklist");
    member = { ...member, token };
  });

  it("its writes as a member are 403 and change nothing; accepting an invitation is 403 and it stays pending", async () => {
    const before = dto(await call("GET", `/Project/Get/${joined.projectID}`, owner));
    const answers = {
      update: await call("PUT", "/Project/Update/", member, {
        ProjectID: joined.projectID,
        ProjectName: joined.projectName,
        ProjectDescription: "edited while Blacklist",
      }),
      updateMarkDown: await call("PUT", `/Project/UpdateMarkDown/${joined.projectID}/blacklisted`, member),
      changeStatus: await call("PUT", `/Project/ChangeStatus/${joined.projectID}`, member),
      accept: await call("POST", "/User/InvitationReply", member, {
        projectID: invitedTo.projectID,
        Username: member.username,
        Role: "Editor",
        IsAccepted: true,
      }),
    };
    for (const [what, res] of Object.entries(answers)) expectEnvelope(res, res.status, what);
    expect(Object.fromEntries(Object.entries(answers).map(([k, r]) => [k, r.status]))).toEqual({
      update: 403,
      updateMarkDown: 403,
      changeStatus: 403,
      accept: 403,
    });
    expect(dto(await call("GET", `/Project/Get/${joined.projectID}`, owner))).toEqual(before);
    const invitations = await call("GET", "/Project/GetAllInvitations", member);
    expectEnvelope(invitations, 200);
    expect(ids(invitations).sort((a, b) => a - b)).toEqual([invitedTo.projectID, declined.projectID]);
  });

  it("it still reads its project, declines an invitation, leaves the project and deletes its own account", async () => {
    const read = await call("GET", `/Project/Get/${joined.projectID}`, member);
    expectEnvelope(read, 200);
    expect(dto(read).projectID).toBe(joined.projectID);

    const decline = await call("PUT", "/user/invitationreply", member, {
      projectID: declined.projectID,
      isAccepted: false,
    });
    expectEnvelope(decline, 200, "decline");
    expect(ids(await call("GET", "/Project/GetAllInvitations", member))).not.toContain(declined.projectID);

    const leave = await call("DELETE", "/user/removecollab", member, { projectID: joined.projectID });
    expectEnvelope(leave, 200, "leave");
    const mine = await call("GET", "/Project/GetAllPermissioned/false", member);
    expectEnvelope(mine, 200);
    expect(ids(mine)).not.toContain(joined.projectID);

    const gone = await call("DELETE", "/user/delete", member);
    expectEnvelope(gone, 200, "delete own account");
    const everyone = await call("GET", "/user/getall", admin);
    expectEnvelope(everyone, 200);
    expect((everyone.body.data as { id: number }[]).map((u) => u.id)).not.toContain(member.id);
  });
});

// ── the chain, for an evaluation that exists before a project holds the hash ────────────────────────
let provider: JsonRpcProvider | undefined;
let registry: RegistryContract;
let chainAdmin: Wallet;
afterAll(() => provider?.destroy());

/** A fresh account with some ETH from this file's chain account. */
async function fundedWallet(): Promise<Wallet> {
  const wallet = Wallet.createRandom().connect(provider as JsonRpcProvider);
  const sent = await chainAdmin.sendTransaction({ to: wallet.address, value: parseEther("1") });
  await waitForReceipt(provider as JsonRpcProvider, sent.hash);
  return wallet as unknown as Wallet;
}

/**
 * Registers the hash and approves it as the chain's voters do: fresh whitelisted voters vote yes until the
 * election is decided (the quorum depends on how many are whitelisted, so it is read, not assumed). Sent
 * from this file's chain account while no sign-up of this file sends anything.
 */
async function approveOnChain(projectHash: string): Promise<void> {
  provider ??= createProvider(sys.anvil.url, sys.anvil.chainId);
  chainAdmin = new Wallet(sys.chainAdminKey, provider);
  registry = registryAt(sys.deployment.registry, chainAdmin);
  const proposer = await fundedWallet();
  await confirm(withRunner(registry, proposer).registerProject(projectHash));
  for (let i = 0; i < 200; i++) {
    const election = (await registry.projectsRegistered(projectHash)) as { finalized: boolean };
    if (election.finalized) return;
    const voter = await fundedWallet();
    await confirm(registry.editUserStatus(voter.address, UserStatus.Whitelisted));
    await confirm(withRunner(registry, voter).voteProposal(projectHash, true));
  }
  throw new Error("the election did not finish");
}
