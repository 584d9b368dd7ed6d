import { testMessageContext } from "@fundraise/bus/testing";
import { type Caller, ProjectsRpc, RPC_ROLES, USER_ROLES } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import { evaluated, projectsOnMemory, projectWrite } from "../test/memory-projects.ts";

// The projects service's rules (rules.md §4, §8) on an in-memory repository (test/memory-projects.ts):
// no Postgres, no bus, no storage service. The SQL, the locks under concurrency and the wiring are the
// integration suites' (rpc/*.int.test.ts).

const ctx = () => testMessageContext();
type Setup = ReturnType<typeof projectsOnMemory>;

let names = 0;
/** An Add by `caller` of a file of its own; answers the project's id and file hash. */
async function add(h: Setup, caller: Caller, file = `file-${++names}`) {
  const dto = await h.service.add(caller, projectWrite(`Project ${++names}`, { file }), ctx());
  return { id: dto.projectID, fileHash: dto.fileHash, name: dto.projectName };
}
const accept = (h: Setup, id: number) => h.service.viewerReply(h.person("Viewer"), id, true, ctx());
const approve = async (h: Setup, fileHash: string, block = 10) =>
  h.chain.applyEvaluation(evaluated(fileHash, true, block), ctx());
const ids = (list: { projectID: number }[]) => list.map((p) => p.projectID);

describe("visibility of single reads and lists (rules.md §4.2, §4.3)", () => {
  async function threeProjects() {
    const h = projectsOnMemory();
    const proposer = h.person();
    const waiting = await add(h, proposer);
    const accepted = await add(h, proposer);
    await accept(h, accepted.id);
    const approved = await add(h, proposer);
    await accept(h, approved.id);
    await approve(h, approved.fileHash);
    return { h, proposer, waiting, accepted, approved };
  }

  it("anonymous and Base: viewer-accepted Approved only; Whitelist: viewer-accepted; Admin, Viewer, members: all", async () => {
    const { h, proposer, waiting, accepted, approved } = await threeProjects();
    const all = [waiting.id, accepted.id, approved.id];
    const listOf = async (caller: Caller | null) => ids(await h.service.list(caller));
    expect(await listOf(null)).toEqual([approved.id]);
    expect(await listOf(h.person("Base"))).toEqual([approved.id]);
    expect(await listOf(h.person("Blacklist"))).toEqual([approved.id]);
    expect(await listOf(h.person("Whitelist"))).toEqual([accepted.id, approved.id]);
    expect(await listOf(h.person("Viewer"))).toEqual(all);
    expect(await listOf(h.person("Admin"))).toEqual(all);
    expect(await listOf(proposer)).toEqual(all);
    expect(ids(await h.service.byStatus(null, "Pending"))).toEqual([]);
    expect(ids(await h.service.byStatus(h.person("Whitelist"), "Pending"))).toEqual([accepted.id]);
    expect(ids(await h.service.top(null, 10))).toEqual([approved.id]);
  });

  it("a hidden project is 404 on a single read; an invitation is enough to see it", async () => {
    const { h, proposer, waiting } = await threeProjects();
    const outsider = h.person();
    await expect(h.service.get(outsider, waiting.id)).rejects.toMatchObject({ code: "PROJECT_NOT_FOUND" });
    await expect(h.service.get(null, waiting.id)).rejects.toMatchObject({ code: "PROJECT_NOT_FOUND" });
    await h.memberships.invite(proposer, { projectID: waiting.id, username: outsider.username }, ctx());
    expect((await h.service.get(outsider, waiting.id)).projectID).toBe(waiting.id);
  });

  it("the lists kept in memory follow every committed change", async () => {
    const { h, accepted } = await threeProjects();
    const before = ids(await h.service.list(null));
    await approve(h, accepted.fileHash, 11);
    expect(ids(await h.service.list(null))).toEqual([accepted.id, ...before].sort((a, b) => a - b));
  });

  it("listTag names the view a caller shares and the table's version; none for a member's own view", async () => {
    const { h, accepted } = await threeProjects();
    const anonymous = await h.service.listTag(null);
    const admin = await h.service.listTag(h.person("Admin"));
    expect(anonymous).toMatch(/^open:.*@\d+$/);
    expect(admin).toMatch(/^all@\d+$/);
    expect(await h.service.listTag(h.person("Viewer"))).toBe(admin);
    expect(await h.service.listTag(h.person("Base"))).toBeNull();
    await approve(h, accepted.fileHash, 12);
    expect(await h.service.listTag(null)).not.toBe(anonymous);
    expect(await h.service.listTag(h.person("Admin"))).not.toBe(admin);
  });
});

describe("Add", () => {
  it("makes the caller the accepted Owner of a Pending proposal, and announces it", async () => {
    const h = projectsOnMemory();
    const proposer = h.person();
    const { id, fileHash, name } = await add(h, proposer);
    expect(await h.service.get(proposer, id)).toMatchObject({
      status: "Pending",
      viewerAccepted: false,
      rating: 0,
      proposerAddress: proposer.address,
    });
    expect(await h.projects.permissionOf(id, proposer.userId)).toMatchObject({
      role: "Owner",
      isAccepted: true,
    });
    expect(h.projects.events).toEqual([
      {
        name: "projects.project.created",
        payload: { projectId: id, fileHash, ownerId: proposer.userId, projectName: name },
      },
      {
        name: "projects.content.taken",
        payload: {
          projectId: id,
          fileHash,
          cid: expect.stringMatching(/^Qm/),
          fileBytes: 1,
          imageBytes: null,
          reason: "project:add",
        },
      },
      { name: "projects.project.changed", payload: { projectId: id, change: "created", before: null } },
    ]);
  });

  it("refuses Blacklist, a missing file, a name taken in any case, and content another project holds", async () => {
    const h = projectsOnMemory();
    const proposer = h.person();
    const first = await add(h, proposer, "same-bytes");
    await expect(
      h.service.add(h.person("Blacklist"), projectWrite("New", { file: "x" }), ctx()),
    ).rejects.toMatchObject({
      code: "ROLE_FORBIDDEN",
    });
    await expect(h.service.add(proposer, projectWrite("New"), ctx())).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
    });
    await expect(
      h.service.add(proposer, projectWrite(first.name.toUpperCase(), { file: "other" }), ctx()),
    ).rejects.toMatchObject({ code: "PROJECT_NAME_TAKEN" });
    await expect(
      h.service.add(proposer, projectWrite("Another", { file: "same-bytes" }), ctx()),
    ).rejects.toMatchObject({
      code: "PROJECT_FILE_TAKEN",
    });
    // Refused writes take nothing and let go of nothing: the same bytes stay with their project.
    expect(h.content.dropped).toEqual([]);
    expect(h.content.taken).toEqual([first.fileHash]);
  });

  it("the review queue: 503 when full, 429 past a proposer's share; a viewer's acceptance makes room", async () => {
    const h = projectsOnMemory({ reviewQueueMax: 3, reviewSharePerProposer: 2 });
    const [one, two] = [h.person(), h.person()];
    const first = await add(h, one);
    await add(h, one);
    await expect(add(h, one)).rejects.toMatchObject({
      code: "PROJECT_REVIEW_SHARE_FULL",
      kind: "rate_limited",
    });
    await add(h, two);
    await expect(add(h, h.person())).rejects.toMatchObject({
      code: "PROJECT_REVIEW_QUEUE_FULL",
      kind: "unavailable",
    });
    await accept(h, first.id);
    await add(h, one);
  });

  it("a caller whose deletion fenced them adds nothing (401)", async () => {
    const h = projectsOnMemory();
    const leaving = h.person();
    await h.fences.fence(leaving.userId, ctx());
    await expect(add(h, leaving)).rejects.toMatchObject({ code: "TOKEN_REVOKED" });
    expect(h.projects.projects.size).toBe(0);
  });
});

describe("Update and UpdateMarkDown", () => {
  it("any accepted member writes; 404 before 403 for others; an invitation or Blacklist does not write", async () => {
    const h = projectsOnMemory();
    const owner = h.person();
    const { id } = await add(h, owner);
    const editor = h.person();
    const invited = h.person();
    await h.memberships.invite(owner, { projectID: id, username: editor.username }, ctx());
    await h.memberships.reply(editor, { projectID: id, isAccepted: true }, ctx());
    await h.memberships.invite(owner, { projectID: id, username: invited.username }, ctx());

    const rename = (caller: Caller, name: string) =>
      h.service.update(caller, projectWrite(name, { id }), ctx());
    await expect(rename(h.person(), "Hidden")).rejects.toMatchObject({ code: "PROJECT_NOT_FOUND" });
    await accept(h, id);
    await expect(rename(h.person("Whitelist"), "Seen")).rejects.toMatchObject({ code: "PROJECT_NOT_MEMBER" });
    await expect(rename(invited, "Invited")).rejects.toMatchObject({ code: "PROJECT_NOT_MEMBER" });
    await expect(rename({ ...editor, role: "Blacklist" }, "Read-only")).rejects.toMatchObject({
      code: "ROLE_FORBIDDEN",
    });
    expect(await rename(editor, "Renamed")).toMatchObject({ projectName: "Renamed", viewerAccepted: true });
    expect(await h.service.updateMarkdown(editor, id, "# Plan", ctx())).toMatchObject({ markDown: "# Plan" });
  });

  it("a new file is a new proposal: reviewed again, its status from its own evaluation, the old content removed", async () => {
    const h = projectsOnMemory();
    const owner = h.person();
    const { id, fileHash } = await add(h, owner);
    await accept(h, id);
    await approve(h, fileHash);
    const next = await h.service.update(owner, projectWrite("Same name", { id, file: "new-bytes" }), ctx());
    expect(next).toMatchObject({ viewerAccepted: false, viewerAcceptedAddress: null, status: "Pending" });
    expect(h.content.dropped).toEqual([fileHash]);
    // Evaluated before any project held it: the next project to take the hash gets that status.
    const evaluatedFirst = await h.service.add(owner, projectWrite("Other", { file: "known" }), ctx());
    await approve(h, evaluatedFirst.fileHash, 12);
    await h.service.delete(owner, evaluatedFirst.projectID, ctx());
    const taken = await h.service.update(owner, projectWrite("Same name", { id, file: "known" }), ctx());
    expect(taken).toMatchObject({ status: "Approved", viewerAccepted: false });
  });

  it("no new file once the auction is created", async () => {
    const h = projectsOnMemory();
    const owner = h.person();
    const { id } = await add(h, owner);
    await h.projects.transaction(async (t) => {
      const project = await t.lockById(id);
      if (project) project.isAuctionCreated = true;
    });
    await expect(
      h.service.update(owner, projectWrite("X", { id, file: "late" }), ctx()),
    ).rejects.toMatchObject({
      code: "PROJECT_AUCTION_EXISTS",
    });
    expect(await h.service.update(owner, projectWrite("Still renamed", { id }), ctx())).toMatchObject({
      projectName: "Still renamed",
    });
  });
});

describe("Delete", () => {
  it("the Owner or an Admin, until the auction is created; the content let go in the same commit", async () => {
    const h = projectsOnMemory();
    const owner = h.person();
    const coOwner = h.person();
    const { id, fileHash } = await add(h, owner);
    await h.memberships.invite(owner, { projectID: id, username: coOwner.username, role: "Co-Owner" }, ctx());
    await h.memberships.reply(coOwner, { projectID: id, isAccepted: true }, ctx());
    await expect(h.service.delete(coOwner, id, ctx())).rejects.toMatchObject({ code: "PROJECT_NOT_MEMBER" });
    await h.service.delete(owner, id, ctx());
    expect(h.projects.events.slice(-3)).toEqual([
      { name: "projects.project.deleted", payload: { projectId: id, fileHash } },
      {
        name: "projects.content.dropped",
        payload: { projectId: id, fileHash, reason: `project:${id}:deleted` },
      },
      {
        name: "projects.project.changed",
        // Who saw it until then: a stream tells them it left their view.
        payload: {
          projectId: id,
          change: "deleted",
          before: { viewerAccepted: false, status: "Pending", memberIds: [owner.userId, coOwner.userId] },
        },
      },
    ]);
    expect(h.content.dropped).toEqual([fileHash]);
    expect(h.projects.permissions.size).toBe(0);

    const other = await add(h, owner);
    await h.projects.transaction(async (t) => {
      const project = await t.lockById(other.id);
      if (project) project.isAuctionCreated = true;
    });
    await expect(h.service.delete(h.person("Admin"), other.id, ctx())).rejects.toMatchObject({
      code: "PROJECT_AUCTION_EXISTS",
    });
  });
});

describe("Rate", () => {
  it("a visible project, not by Blacklist, Base on Approved ones only; the rating is the mean, one per user", async () => {
    const h = projectsOnMemory();
    const { id, fileHash } = await add(h, h.person());
    await accept(h, id);
    const base = h.person("Base");
    await expect(h.service.rate(base, id, 4, ctx())).rejects.toMatchObject({ code: "PROJECT_NOT_FOUND" });
    const whitelisted = h.person("Whitelist");
    expect(await h.service.rate(whitelisted, id, 4, ctx())).toMatchObject({ rating: 4 });
    await expect(h.service.rate(h.person("Blacklist"), id, 1, ctx())).rejects.toMatchObject({
      code: "PROJECT_NOT_FOUND",
    });
    await approve(h, fileHash);
    await expect(h.service.rate(h.person("Blacklist"), id, 1, ctx())).rejects.toMatchObject({
      code: "ROLE_FORBIDDEN",
    });
    expect(await h.service.rate(base, id, 2, ctx())).toMatchObject({ rating: 3 });
    expect(await h.service.rate(whitelisted, id, 5, ctx())).toMatchObject({ rating: 3.5 });
    await expect(h.service.rate(base, id, 5.5, ctx())).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
  });
});

describe("review by a viewer", () => {
  it("Viewer or Admin only, never of a project they belong to, once; a rejection removes the proposal", async () => {
    const h = projectsOnMemory();
    const owner = h.person();
    const viewer = h.person("Viewer");
    const first = await add(h, owner);
    const second = await add(h, owner);
    await expect(h.service.viewerQueue(owner)).rejects.toMatchObject({ code: "ROLE_FORBIDDEN" });
    expect(ids(await h.service.viewerQueue(viewer))).toEqual([first.id, second.id]);
    await h.memberships.invite(owner, { projectID: first.id, username: viewer.username }, ctx());
    await expect(h.service.viewerReply(viewer, first.id, true, ctx())).rejects.toMatchObject({
      code: "PROJECT_SELF_REVIEW",
    });
    const other = h.person("Viewer");
    expect(await h.service.viewerReply(other, first.id, true, ctx())).toMatchObject({
      viewerAccepted: true,
      viewerAcceptedAddress: other.address,
    });
    await expect(h.service.viewerReply(other, first.id, false, ctx())).rejects.toMatchObject({
      code: "PROJECT_ALREADY_REVIEWED",
    });
    expect(await h.service.viewerReply(other, second.id, false, ctx())).toBeNull();
    expect(h.projects.projects.has(second.id)).toBe(false);
    expect(h.content.dropped).toEqual([second.fileHash]);
  });
});

describe("RPCs only some roles may call (protocol RPC_ROLES, paired with the gateway's routes)", () => {
  it("refuse every role the list does not name (403), before anything else; admit the others", async () => {
    const h = projectsOnMemory();
    const calls: Record<string, (caller: Caller) => Promise<unknown>> = {
      [ProjectsRpc.viewerQueue.name]: (caller) => h.service.viewerQueue(caller),
      [ProjectsRpc.viewerReply.name]: (caller) => h.service.viewerReply(caller, 999_999, true, ctx()),
    };
    const reserved = Object.keys(RPC_ROLES).filter((name) => name.startsWith("projects."));
    expect(Object.keys(calls).sort()).toEqual(reserved.sort());
    for (const [rpc, call] of Object.entries(calls)) {
      for (const role of USER_ROLES) {
        const refused = await call(h.person(role)).then(
          () => false,
          (error: { code?: string }) => error.code === "ROLE_FORBIDDEN",
        );
        expect(refused, `${rpc} by ${role}`).toBe(!RPC_ROLES[rpc]?.includes(role));
      }
    }
  });
});

describe("chain facts", () => {
  it("the first evaluation of a hash decides, whatever order the facts arrive in; once per log", async () => {
    const h = projectsOnMemory();
    const owner = h.person();
    const { id, fileHash } = await add(h, owner);
    await h.chain.applyEvaluation(evaluated(fileHash, false, 20), ctx());
    expect((await h.service.get(owner, id)).status).toBe("Rejected");
    await h.chain.applyEvaluation(evaluated(fileHash, true, 30), ctx());
    expect((await h.service.get(owner, id)).status).toBe("Rejected");
    await h.chain.applyEvaluation(evaluated(fileHash, true, 15), ctx());
    expect((await h.service.get(owner, id)).status).toBe("Approved");
  });
});

describe("an Add retried without a key (rules.md §8.14)", () => {
  it("the same proposer, name and content within 10 minutes is the project it made; anything else is 409", async () => {
    const h = projectsOnMemory();
    const proposer = h.person();
    const write = projectWrite("Retried", { file: "same bytes" });
    const first = await h.service.add(proposer, write, ctx());
    expect(first.existing).toBeUndefined();
    const again = await h.service.add(proposer, projectWrite("retried", { file: "same bytes" }), ctx());
    expect(again).toEqual({ ...first, existing: true });
    expect(h.projects.projects.size).toBe(1);
    // Another file, another proposer: the name is taken.
    await expect(
      h.service.add(proposer, projectWrite("Retried", { file: "other" }), ctx()),
    ).rejects.toMatchObject({
      code: "PROJECT_NAME_TAKEN",
    });
    await expect(h.service.add(h.person(), write, ctx())).rejects.toMatchObject({
      code: "PROJECT_NAME_TAKEN",
    });
    // Ten minutes on, a retry is a new proposal of a taken name.
    const made = h.projects.projects.get(first.projectID);
    if (made) made.createdAt = new Date(Date.now() - 11 * 60_000);
    await expect(h.service.add(proposer, write, ctx())).rejects.toMatchObject({ code: "PROJECT_NAME_TAKEN" });
  });

  it("a retry sent while the first Add is still committing answers that project too", async () => {
    const h = projectsOnMemory();
    const proposer = h.person();
    const write = projectWrite("Raced", { file: "same bytes" });
    // Both pass the early checks before either commits; the second meets the first under the lock.
    const [a, b] = await Promise.all([
      h.service.add(proposer, write, ctx()),
      h.service.add(proposer, write, ctx()),
    ]);
    expect(b.projectID).toBe(a.projectID);
    expect([a.existing, b.existing]).toEqual([undefined, true]);
    expect(h.projects.projects.size).toBe(1);
    expect(h.content.dropped).toEqual([]);
  });
});
