import { ApiError, createClient as createApiClient } from "@fundraise/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Answer, createClient } from "./client.ts";
import {
  catPath,
  cidOfFileHash,
  createPeople,
  expectEnvelope,
  hexOf,
  identityOf,
  isPinned,
  newContent,
  PROJECT_DTO_KEYS,
  type ProjectDto,
  publishEvaluation,
  type User,
} from "./projects-kit.ts";
import { type SharedSystem, sharedSystem } from "./shared.ts";

// The existing web client's project flows on the running system, with its
// exact requests: its key casings, `fileHex` as lower-case hex without 0x, PUT for invite and POST for the
// invitation reply, trailing slashes, the imageUrl it read sent back on Update, and `Bearer undefined`
// when nobody is signed in. IPFS is the Kubo-RPC stand-in of packages/ipfs-node, not Kubo. The flows
// whose requests need no casing of their own (sign-in, Add, the profile and viewer lists, ViewerReply) go
// through @fundraise/client, the typed client, as a new web client would.
let sys: SharedSystem;
const client = createClient(() => sys);
const people = createPeople(() => sys, client);
let owner: User;
let collaborator: User;
let viewer: User;
let admin: User;
let outsider: User;

beforeAll(async () => {
  sys = await sharedSystem();
  [owner, collaborator, viewer, admin, outsider] = await Promise.all([
    people.newUser("Base"),
    people.newUser("Base"),
    people.newUser("Viewer"),
    people.newUser("Admin"),
    people.newUser("Base"),
  ]);
});

const ipfs = () => sys.ipfsUrl as string;
/** @fundraise/client for this user (anonymous without one), calling from this file's address. */
const apiOf = (user?: User) =>
  createApiClient({
    baseUrl: sys.gatewayUrl,
    ...(user ? { token: user.token } : {}),
    headers: { "x-forwarded-for": client.ip },
  });
const asUser = (user: User | undefined, method: string, path: string, body?: unknown) =>
  client.api(method, path, {
    // The web client sends its cookie even when it is empty: `Bearer undefined`.
    authorization: `Bearer ${user ? user.token : "undefined"}`,
    ...(body === undefined ? {} : { body }),
  });
const dto = (res: Answer) => res.body.data as ProjectDto;
const list = (res: Answer) => res.body.data as ProjectDto[];
const ids = (res: Answer) => list(res).map((p) => p.projectID);
const unique = (label: string) => `${label} ${Math.random().toString(36).slice(2, 10)}`;

/**
 * The Apply page, through @fundraise/client: `{fileHex, projectName, projectDescription, imageUrl: <image
 * hex>}`, the file as lower-case hex without 0x.
 */
async function apply(user: User, label: string, options: { image?: boolean } = {}) {
  const content = newContent(label, options.image ?? true);
  const name = unique(label);
  const project = await apiOf(user).POST("/Project/Add", {
    body: {
      fileHex: hexOf(content.file),
      projectName: name,
      projectDescription: `About ${label}`,
      ...(content.image ? { imageUrl: hexOf(content.image) } : {}),
    },
  });
  if (!project) throw new Error(`Add of ${name} answered no project`);
  return { project, content, name };
}

/** The projects the owner's profile lists (GetAllPermissioned/false), through @fundraise/client. */
const ownProjectIds = async (user: User) =>
  (
    (await apiOf(user).GET("/Project/GetAllPermissioned/{withHex}", {
      params: { path: { withHex: false } },
    })) ?? []
  ).map((p) => p.projectID);

/** Sign-in through @fundraise/client: GetNonce, the nonce signed to Login, the token kept for later calls. */
async function signIn(user: User) {
  const api = apiOf();
  const address = user.wallet.address;
  const nonce = await api.GET("/Authentication/GetNonce/{address}", { params: { path: { address } } });
  const signedMessage = await user.wallet.signMessage(`LOGIN: ${nonce}`);
  api.setToken(await api.POST("/Authentication/Login", { body: { address, signedMessage } }));
  return api;
}

describe("the web client's flows", () => {
  let main: Awaited<ReturnType<typeof apply>>;
  let plain: ProjectDto;

  it("sign-in and apply through @fundraise/client: Add with lower-case hex (no 0x) and an image answers the ProjectDTO, the content on IPFS", async () => {
    // Sign-in, then the Apply page's login gate.
    const api = await signIn(owner);
    expect(api.token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(await api.GET("/user/get")).toMatchObject({
      id: owner.id,
      username: owner.username,
      role: "Base",
    });
    main = await apply(owner, "solar roofs");
    const expected = await identityOf(main.content);
    const project = main.project;
    expect(Object.keys(project).sort()).toEqual(PROJECT_DTO_KEYS);
    expect(project).toMatchObject({
      projectName: main.name,
      projectDescription: "About solar roofs",
      fileHash: expected.fileHash,
      imageUrl: `/ipfs/${expected.cid}/image`,
      status: "Pending",
      viewerAccepted: false,
      viewerAcceptedAddress: null,
      rating: 0,
      proposerAddress: owner.wallet.address,
      isAuctionCreated: false,
      isAuctionStarted: false,
    });
    expect(project.fileHash).toMatch(/^[0-9A-F]{64}$/);
    expect(project.projectID).toBeTypeOf("number");
    expect(new Date(project.date as string).toISOString()).toBe(project.date);
    // The content is pinned on the node, and the image path reads back the image's bytes.
    expect(await isPinned(ipfs(), expected.cid)).toBe(true);
    expect(await catPath(ipfs(), project.imageUrl as string)).toEqual(main.content.image);
    expect(await catPath(ipfs(), `/ipfs/${expected.cid}/whitepaper`)).toEqual(main.content.file);
  });

  it("the web client's images and downloads through the local IPFS gateway: the bytes, Kubo's content types, cached for good", async () => {
    // helpers.js of the web client: `<gateway><imageUrl without /ipfs/>`; `pnpm start` prints the gateway.
    const gateway = `${ipfs()}/ipfs/`;
    const { cid } = await identityOf(main.content);
    const image = await fetch(`${gateway}${(main.project.imageUrl as string).replace(/^\/ipfs\//, "")}`);
    expect(image.status).toBe(200);
    expect(image.headers.get("content-type")).toBe("image/png");
    expect(image.headers.get("cache-control")).toBe("public, max-age=29030400, immutable");
    expect(Buffer.from(await image.arrayBuffer())).toEqual(main.content.image);
    const whitepaper = await fetch(`${gateway}${cid}/whitepaper`);
    expect(whitepaper.headers.get("content-type")).toBe("application/pdf");
    expect(Buffer.from(await whitepaper.arrayBuffer())).toEqual(main.content.file);
    const part = await fetch(`${gateway}${cid}/whitepaper`, { headers: { range: "bytes=0-7" } });
    expect(part.status).toBe(206);
    expect(await part.text()).toBe("%PDF-1.4");
    // Content the node does not have: 404 at once, no hang.
    const unknown = await fetch(`${gateway}${(await identityOf(newContent("never added"))).cid}/image`, {
      signal: AbortSignal.timeout(5_000),
    });
    expect(unknown.status).toBe(404);
  });

  it("apply: PascalCase keys, no image → imageUrl null", async () => {
    const content = newContent("PascalCase", false);
    const name = unique("Pascal");
    const res = await asUser(owner, "POST", "/Project/Add", {
      ProjectName: name,
      ProjectDescription: "keys in any case",
      FileHex: hexOf(content.file),
      Markdown: "# Hello",
    });
    expectEnvelope(res, 201);
    plain = dto(res);
    expect(plain).toMatchObject({
      projectName: name,
      projectDescription: "keys in any case",
      markDown: "# Hello",
      imageUrl: null,
      fileHash: (await identityOf(content)).fileHash,
    });
  });

  it("profile: GetAllPermissioned/false and /true, GetAllInvitations, and the client's two Update bodies", async () => {
    const mine = await asUser(owner, "GET", "/Project/GetAllPermissioned/false");
    expectEnvelope(mine, 200);
    expect(ids(mine)).toEqual(expect.arrayContaining([main.project.projectID, plain.projectID]));
    expect(list(mine).every((p) => !("fileHex" in p))).toBe(true);
    const withHex = await asUser(owner, "GET", "/Project/GetAllPermissioned/true");
    expectEnvelope(withHex, 200);
    expect(list(withHex).find((p) => p.projectID === main.project.projectID)?.fileHex).toBe(
      hexOf(main.content.file),
    );
    const invitations = await asUser(owner, "GET", "/Project/GetAllInvitations");
    expectEnvelope(invitations, 200);
    expect(invitations.body.data).toEqual([]);

    // Profile: `{ProjectID, ProjectName, ProjectDescription}` to /Project/Update/ (trailing slash).
    const renamed = unique("solar roofs, renamed");
    const profileUpdate = await asUser(owner, "PUT", "/Project/Update/", {
      ProjectID: main.project.projectID,
      ProjectName: renamed,
      ProjectDescription: "Roofs that pay for themselves",
    });
    expectEnvelope(profileUpdate, 200);
    expect(dto(profileUpdate)).toMatchObject({
      projectID: main.project.projectID,
      projectName: renamed,
      projectDescription: "Roofs that pay for themselves",
      fileHash: main.project.fileHash,
      imageUrl: main.project.imageUrl,
    });

    // Project info: GET, then the record it read sent back with its changes, imageUrl (an IPFS path)
    // included; rating and status are not the client's to set.
    const read = await asUser(owner, "GET", `/Project/Get/${main.project.projectID}`);
    expectEnvelope(read, 200);
    const current = dto(read);
    const infoUpdate = await asUser(owner, "PUT", "/Project/Update/", {
      projectID: current.projectID,
      projectName: current.projectName,
      projectDescription: current.projectDescription,
      imageUrl: current.imageUrl,
      rating: 5,
      status: "Approved",
      markDown: "## Plan\nPanels first.",
      fileHash: current.fileHash,
    });
    expectEnvelope(infoUpdate, 200);
    expect(dto(infoUpdate)).toEqual({
      ...current,
      markDown: "## Plan\nPanels first.",
      date: current.date,
    });
    // Re-GET as the client does: the same record.
    expect(dto(await asUser(owner, "GET", `/Project/Get/${main.project.projectID}`))).toEqual(
      dto(infoUpdate),
    );
    expect(await isPinned(ipfs(), cidOfFileHash(current.fileHash))).toBe(true);
    main.name = renamed;
  });

  it("invite with PUT /User/Invite/, reply with POST /User/InvitationReply; the Editor then updates", async () => {
    const id = main.project.projectID;
    const invite = await asUser(owner, "PUT", "/User/Invite/", {
      projectID: id,
      username: collaborator.username,
      role: "Editor",
    });
    expectEnvelope(invite, 201);
    expect(String(invite.body.data)).toMatch(/^[0-9]+$/);
    // The invitee's profile: the invitation on /User/Get and the project on GetAllInvitations.
    const me = await asUser(collaborator, "GET", "/User/Get");
    expectEnvelope(me, 200);
    expect((me.body.data as { invitations: unknown[] }).invitations).toEqual([
      {
        id: Number(invite.body.data),
        projectID: id,
        userID: collaborator.id,
        role: "Editor",
        isAccepted: false,
      },
    ]);
    const invited = await asUser(collaborator, "GET", "/Project/GetAllInvitations");
    expectEnvelope(invited, 200);
    expect(ids(invited)).toEqual([id]);
    expect(await ownProjectIds(collaborator)).toEqual([]);

    // A second invitation, oneself, or nobody: refused.
    expectEnvelope(
      await asUser(owner, "PUT", "/User/Invite/", { projectID: id, username: collaborator.username }),
      409,
    );
    expectEnvelope(
      await asUser(owner, "PUT", "/User/Invite/", { projectID: id, username: owner.username }),
      400,
    );
    expectEnvelope(
      await asUser(owner, "PUT", "/User/Invite/", { projectID: id, username: `nobody_${Date.now()}` }),
      404,
    );

    const reply = await asUser(collaborator, "POST", "/User/InvitationReply", {
      projectID: id,
      Username: collaborator.username,
      Role: "Editor",
      IsAccepted: true,
    });
    expectEnvelope(reply, 200);
    expect(await ownProjectIds(collaborator)).toEqual([id]);
    expectEnvelope(await asUser(collaborator, "GET", "/Project/GetAllInvitations"), 200);
    expect(list(await asUser(collaborator, "GET", "/Project/GetAllInvitations"))).toEqual([]);
    // Replying again: no pending invitation.
    expectEnvelope(
      await asUser(collaborator, "POST", "/User/InvitationReply", { projectID: id, IsAccepted: true }),
      404,
    );
    // Co-owners: the Owner only (an Editor is a member, not a co-owner).
    const coOwners = await asUser(collaborator, "GET", `/user/getcoowners/${id}`);
    expectEnvelope(coOwners, 200);
    expect((coOwners.body.data as { username: string }[]).map((u) => u.username)).toEqual([owner.username]);

    const edit = await asUser(collaborator, "PUT", "/Project/Update/", {
      ProjectID: id,
      ProjectName: main.name,
      ProjectDescription: "Edited by the Editor",
    });
    expectEnvelope(edit, 200);
    expect(dto(edit).projectDescription).toBe("Edited by the Editor");
    // An outsider cannot see a Pending project nobody reviewed: 404 before 403.
    expectEnvelope(
      await asUser(outsider, "PUT", "/Project/Update/", { ProjectID: id, ProjectName: "taken over" }),
      404,
    );
  });

  it("viewer page through @fundraise/client: the queue, ViewerReply true accepts, false removes the proposal and unpins it", async () => {
    const asViewer = apiOf(viewer);
    const asAdmin = apiOf(admin);
    const queue = (await asViewer.GET("/Project/ViewerPage/GetAll")) ?? [];
    expect(queue.map((p) => p.projectID)).toEqual(
      expect.arrayContaining([main.project.projectID, plain.projectID]),
    );
    const row = queue.find((p) => p.projectID === main.project.projectID);
    expect(row?.fileHash).toBe(main.project.fileHash);

    const reply = (api: typeof asViewer, id: number, accept: boolean) =>
      api.PUT("/Project/ViewerReply/{id}/{reply}", { params: { path: { id, reply: accept } } });
    expect(await reply(asViewer, main.project.projectID, true)).toMatchObject({
      projectID: main.project.projectID,
      viewerAccepted: true,
      viewerAcceptedAddress: viewer.wallet.address,
      status: "Pending",
    });
    expect(((await asViewer.GET("/Project/ViewerPage/GetAll")) ?? []).map((p) => p.projectID)).not.toContain(
      main.project.projectID,
    );
    // A refusal is an ApiError with the envelope's status, message and the gateway's error code.
    const refused = await reply(asAdmin, main.project.projectID, false).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({
      status: 409,
      code: expect.any(String),
      body: { success: false, data: null },
    });

    expect(await reply(asViewer, plain.projectID, false)).toBeNull();
    await expect(
      asAdmin.GET("/Project/Get/{id}", { params: { path: { id: plain.projectID } } }),
    ).rejects.toMatchObject({ status: 404 });
    expect(await ownProjectIds(owner)).not.toContain(plain.projectID);
    await expect.poll(() => isPinned(ipfs(), cidOfFileHash(plain.fileHash)), { timeout: 10_000 }).toBe(false);
  });

  it("anonymous lists with Bearer undefined: an accepted project appears once it is Approved on chain", async () => {
    const id = main.project.projectID;
    const anonymousList = async (authorization: string, path = "/Project/Get/All") => {
      const res = await client.api("GET", path, { authorization });
      expectEnvelope(res, 200, `${authorization} ${path}`);
      return ids(res);
    };
    // Viewer-accepted but Pending: members and Whitelist see it, anonymous callers do not.
    expect(await anonymousList("Bearer undefined")).not.toContain(id);
    expectEnvelope(await asUser(undefined, "GET", `/Project/Get/${id}`), 404);

    await publishEvaluation(sys, main.project.fileHash, true);
    await expect
      .poll(async () => dto(await asUser(owner, "GET", `/Project/Get/${id}`)).status, { timeout: 10_000 })
      .toBe("Approved");
    for (const authorization of ["Bearer undefined", "Bearer null", "Bearer "]) {
      expect(await anonymousList(authorization)).toContain(id);
      expect(await anonymousList(authorization, "/project/get/all/")).toContain(id);
    }
    const top = await client.api("GET", "/Project/GetProjects/5", { authorization: "Bearer undefined" });
    expectEnvelope(top, 200);
    expect(list(top).length).toBeLessThanOrEqual(5);
    const ratings = list(top).map((p) => p.rating);
    expect(ratings).toEqual([...ratings].sort((a, b) => b - a));
    const one = await asUser(undefined, "GET", `/Project/Get/${id}`);
    expectEnvelope(one, 200);
    expect(dto(one).status).toBe("Approved");
    // A route that needs a token: Bearer undefined is 401 there.
    expectEnvelope(await asUser(undefined, "GET", "/Project/GetAllPermissioned/false"), 401);
  });

  it("the hot lists answer by version: an ETag per view, 304 while nothing changed, a new one after any change", async () => {
    const getAll = (token?: string, etag?: string) =>
      fetch(`${sys.gatewayUrl}/Project/Get/All`, {
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(etag ? { "if-none-match": etag } : {}),
        },
      });
    const first = await getAll();
    const anonymous = first.headers.get("etag") as string;
    expect(anonymous).toMatch(/^"[\w-]{27}"$/);
    const second = await getAll(undefined, anonymous);
    expect(second.status).toBe(304);
    expect(await second.text()).toBe("");
    // The web client's anonymous header is the anonymous view: the same version, 304 as well.
    const webClient = await fetch(`${sys.gatewayUrl}/project/get/all/`, {
      headers: { authorization: "Bearer undefined", "if-none-match": anonymous },
    });
    expect(webClient.status).toBe(304);
    // Admin's view is another list: its own ETag; the anonymous one never matches it.
    const asAdmin = await getAll(admin.token, anonymous);
    expect(asAdmin.status).toBe(200);
    expect(asAdmin.headers.get("etag")).not.toBe(anonymous);
    // A member's view depends on their memberships: listed each time, its content's ETag saves the transfer.
    const asOwner = await getAll(owner.token);
    expect(asOwner.status).toBe(200);
    const own = asOwner.headers.get("etag") as string;
    expect(own).not.toBe(anonymous);
    expect((await getAll(owner.token, own)).status).toBe(304);
    // Any change to a project moves the version, even one anonymous callers do not see yet.
    await apply(outsider, "moves the version", { image: false });
    const third = await getAll(undefined, anonymous);
    expect(third.status).toBe(200);
    expect(third.headers.get("etag")).not.toBe(anonymous);
    expect(((await third.json()) as { data: ProjectDto[] }).data.map((p) => p.projectID)).toEqual(
      ((await first.json()) as { data: ProjectDto[] }).data.map((p) => p.projectID),
    );
  });

  it("rate: one rating per user (a new one replaces it), the mean on the project; bad ratings change nothing", async () => {
    const id = main.project.projectID;
    const rate = (user: User, rating: string) => asUser(user, "PUT", `/Project/Rate/${id}/${rating}`);
    const first = await rate(collaborator, "4");
    expectEnvelope(first, 200);
    expect(dto(first).rating).toBe(4);
    expect(dto(await rate(viewer, "2")).rating).toBe(3);
    expect(dto(await rate(collaborator, "5")).rating).toBe(3.5);
    expect(dto(await rate(outsider, "0.5")).rating).toBeCloseTo(2.5, 10);
    for (const bad of ["NaN", "-1", "5.0001", "1e309", "Infinity", "1e1", "five"]) {
      expectEnvelope(await rate(outsider, bad), 400, `rating ${bad}`);
    }
    expect(dto(await asUser(outsider, "GET", `/Project/Get/${id}`)).rating).toBeCloseTo(2.5, 10);
    // The top list is by rating: this project is ahead of every unrated one.
    const top = list(
      await client.api("GET", "/Project/GetProjects/100", { authorization: "Bearer undefined" }),
    );
    const index = top.findIndex((p) => p.projectID === id);
    expect(index).toBeGreaterThanOrEqual(0);
    expect(top.slice(index + 1).every((p) => p.rating <= 2.5)).toBe(true);
  });

  it("delete: the Owner's Delete removes the card, the lists' entry and the content", async () => {
    const id = main.project.projectID;
    // Only the Admin or the Owner: the Editor is refused.
    expectEnvelope(await asUser(collaborator, "DELETE", `/Project/Delete/${id}`), 403);
    const gone = await asUser(owner, "DELETE", `/Project/Delete/${id}`);
    expectEnvelope(gone, 200);
    expect(await ownProjectIds(owner)).not.toContain(id);
    expect(await ownProjectIds(collaborator)).not.toContain(id);
    expect(
      ids(await client.api("GET", "/Project/Get/All", { authorization: "Bearer undefined" })),
    ).not.toContain(id);
    expectEnvelope(await asUser(admin, "GET", `/Project/Get/${id}`), 404);
    expectEnvelope(await asUser(owner, "DELETE", `/Project/Delete/${id}`), 404);
    await expect
      .poll(() => isPinned(ipfs(), cidOfFileHash(main.project.fileHash)), { timeout: 10_000 })
      .toBe(false);
  });
});

describe("bad input: a 4xx envelope, and nothing written", () => {
  let existing: Awaited<ReturnType<typeof apply>>;
  beforeAll(async () => {
    existing = await apply(owner, "existing");
  });
  afterAll(async () => {
    if (existing) await asUser(owner, "DELETE", `/Project/Delete/${existing.project.projectID}`);
  });

  const name201 = "n".repeat(201);
  const cases: [
    string,
    () => { body: Record<string, unknown>; content?: { file: Buffer; image?: Buffer } },
    number,
  ][] = [
    ["odd-length fileHex", () => ({ body: { projectName: unique("odd"), fileHex: "abc" } }), 400],
    ["fileHex that is not hex", () => ({ body: { projectName: unique("nothex"), fileHex: "zz" } }), 400],
    ["empty fileHex (an empty file)", () => ({ body: { projectName: unique("empty"), fileHex: "" } }), 400],
    ["no fileHex", () => ({ body: { projectName: unique("nofile") } }), 400],
    [
      "odd-length image hex",
      () => {
        const content = newContent("odd image", false);
        return { body: { projectName: unique("oddimg"), fileHex: hexOf(content.file), imageUrl: "abc" } };
      },
      400,
    ],
    [
      "a name of 201 characters",
      () => {
        const content = newContent("long name");
        return {
          body: {
            projectName: name201,
            fileHex: hexOf(content.file),
            imageUrl: hexOf(content.image as Buffer),
          },
          content,
        };
      },
      400,
    ],
    [
      "a blank name",
      () => {
        const content = newContent("blank name");
        return {
          body: {
            projectName: "   ",
            fileHex: hexOf(content.file),
            imageUrl: hexOf(content.image as Buffer),
          },
          content,
        };
      },
      400,
    ],
    [
      "a name taken in another case",
      () => {
        const content = newContent("dup name");
        return {
          body: {
            projectName: existing.name.toUpperCase(),
            fileHex: hexOf(content.file),
            imageUrl: hexOf(content.image as Buffer),
          },
          content,
        };
      },
      409,
    ],
  ];

  it.each(cases)("Add with %s", async (_name, make, status) => {
    const before = await ownProjectIds(owner);
    const { body, content } = make();
    const res = await asUser(owner, "POST", "/Project/Add", body);
    expectEnvelope(res, status);
    expect(res.body.data).toBeNull();
    expect(await ownProjectIds(owner)).toEqual(before);
    // Content that would have been valid does not stay on IPFS: the gateway releases a refused write's
    // content right after its answer (ADR 0027).
    if (content) {
      const { cid } = await identityOf(content);
      await expect.poll(() => isPinned(ipfs(), cid), { timeout: 30_000 }).toBe(false);
    }
  });

  it("Add with the same file as an existing project: 409, that project's content stays", async () => {
    const before = await ownProjectIds(owner);
    const res = await asUser(owner, "POST", "/Project/Add", {
      projectName: unique("same file"),
      fileHex: hexOf(existing.content.file),
      imageUrl: hexOf(existing.content.image as Buffer),
    });
    expectEnvelope(res, 409);
    expect(await ownProjectIds(owner)).toEqual(before);
    expect(await isPinned(ipfs(), cidOfFileHash(existing.project.fileHash))).toBe(true);
  });

  it("Update to a taken name (409), of a missing project (404), with a 201-character name (400): unchanged", async () => {
    const other = await apply(owner, "other");
    try {
      const update = (body: Record<string, unknown>) => asUser(owner, "PUT", "/Project/Update", body);
      expectEnvelope(
        await update({ projectID: other.project.projectID, projectName: existing.name.toLowerCase() }),
        409,
      );
      expectEnvelope(await update({ projectID: 2_147_483_647, projectName: unique("missing") }), 404);
      expectEnvelope(await update({ projectID: other.project.projectID, projectName: name201 }), 400);
      expectEnvelope(
        await update({ projectID: other.project.projectID, projectName: other.name, fileHex: "abc" }),
        400,
      );
      expect(dto(await asUser(owner, "GET", `/Project/Get/${other.project.projectID}`))).toEqual(
        other.project,
      );
    } finally {
      await asUser(owner, "DELETE", `/Project/Delete/${other.project.projectID}`);
    }
  });

  it("markdown over 200,000 characters: 400 on Add and on UpdateMarkDown's body form, nothing written", async () => {
    const before = await ownProjectIds(owner);
    const content = newContent("long markdown", false);
    const long = "m".repeat(200_001);
    const add = await asUser(owner, "POST", "/Project/Add", {
      projectName: unique("long markdown"),
      fileHex: hexOf(content.file),
      markDown: long,
    });
    expectEnvelope(add, 400);
    expect(await ownProjectIds(owner)).toEqual(before);
    // Released after the answer went out (uploads/released.ts): wait for it, not for a fast machine.
    const refusedCid = (await identityOf(content)).cid;
    await expect.poll(() => isPinned(ipfs(), refusedCid), { timeout: 30_000 }).toBe(false);
    const id = existing.project.projectID;
    expectEnvelope(
      await asUser(owner, "PUT", `/Project/UpdateMarkDown/${id}/short`, { markDown: long }),
      400,
    );
    expect(dto(await asUser(owner, "GET", `/Project/Get/${id}`)).markDown).toBe(existing.project.markDown);
  });

  it("Update with a new fileHex replaces the content: a new fileHash, the old content unpinned", async () => {
    const other = await apply(owner, "replaced");
    try {
      const content = newContent("replacement", false);
      const res = await asUser(owner, "PUT", "/Project/Update", {
        projectID: other.project.projectID,
        projectName: other.name,
        fileHex: hexOf(content.file),
      });
      expectEnvelope(res, 200);
      const expected = await identityOf(content);
      expect(dto(res)).toMatchObject({ fileHash: expected.fileHash, imageUrl: null });
      expect(await isPinned(ipfs(), expected.cid)).toBe(true);
      await expect
        .poll(() => isPinned(ipfs(), cidOfFileHash(other.project.fileHash)), { timeout: 10_000 })
        .toBe(false);
    } finally {
      await asUser(owner, "DELETE", `/Project/Delete/${other.project.projectID}`);
    }
  });

  it("a name of exactly 200 characters is accepted", async () => {
    const content = newContent("200");
    const name = `${unique("x").replace(" ", "_")}`.padEnd(200, "y");
    const res = await asUser(owner, "POST", "/Project/Add", {
      projectName: name,
      fileHex: hexOf(content.file),
    });
    expectEnvelope(res, 201);
    expect(dto(res).projectName).toBe(name);
    expectEnvelope(await asUser(owner, "DELETE", `/Project/Delete/${dto(res).projectID}`), 200);
  });
});
