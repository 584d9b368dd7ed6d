import { type Caller, isReviewer, type SessionState, type UserRole } from "@fundraise/protocol";
import { silentLogger } from "@fundraise/service-kit/testing";
import { describe, expect, it } from "vitest";
import { createTokenVerifier } from "../plugins/auth.ts";
import { createTestSigner } from "../test/harness.ts";
import { createMemoryLiveLog } from "../test/live-log.ts";
import { createLiveHub, type StreamIdentity } from "./hub.ts";
import type { Outbound } from "./messages.ts";
import type { ProjectView } from "./prepare.ts";

// The hub on the in-memory log (test/live-log.ts), with the projects service's `views` and the session
// store as maps: the rules of who gets what, resume and cut-offs. The HTTP side is events.int.test.ts'.

const CHANGED = "projects.project.changed";

function system(options: { maxBufferedBytes?: number } = {}) {
  const log = createMemoryLiveLog();
  const projects = new Map<number, ProjectView>();
  const sessions = new Map<number, SessionState>();
  let viewsCalls = 0;
  const hub = createLiveHub({
    log,
    views: async (ids) => {
      viewsCalls += 1;
      return ids.flatMap((id) => projects.get(id) ?? []);
    },
    sessions: {
      get: async (userId) =>
        sessions.get(userId) ?? { role: null, version: 0, revokedBelow: 0, deleted: false },
    },
    logger: silentLogger(),
    catchUpIdleMs: 50,
    ...options,
  });
  const project = (
    id: number,
    state: { viewerAccepted: boolean; status: string },
    memberIds: number[] = [],
  ) => {
    projects.set(id, {
      project: { projectID: id, projectName: `P${id}`, ...state } as unknown as ProjectView["project"],
      memberIds,
    });
  };
  const change = (
    projectId: number,
    change: string,
    before: { viewerAccepted: boolean; status: string; memberIds: number[] } | null,
    messageId?: string,
  ) => log.append(CHANGED, { projectId, change, before }, messageId);
  /** users' role-changed event: `changedBy` an admin's id (revokes the user's earlier tokens) or "chain". */
  const roleChanged = (
    userId: number,
    from: UserRole,
    to: UserRole,
    by: { changedBy: string; version: number },
  ) => log.append("users.user.role-changed", { userId, role: to, previousRole: from, ...by });
  return { log, hub, project, change, roleChanged, sessions, viewsCalls: () => viewsCalls };
}

const person = (userId: number, role: UserRole): Caller => ({
  userId,
  username: `u${userId}`,
  address: `0x${userId.toString(16).padStart(40, "0")}`,
  role,
});
const as = (caller: Caller | null): StreamIdentity => ({ caller, tokenVersion: 1, expiresAt: null });

/** A stream's client side: what it was sent, parsed, and whether it was ended. */
function client(buffered = () => 0) {
  const sent: Outbound[] = [];
  const state = { ended: false };
  return {
    sent,
    state,
    connection: {
      write: (m: Outbound) => {
        sent.push(m);
        return buffered();
      },
      end: () => {
        state.ended = true;
      },
    },
    /** The typed messages, without positions and advice. */
    messages: () =>
      sent
        .filter((m) => m.event !== undefined)
        .map((m) => ({ event: m.event, id: m.id, ...JSON.parse(m.data ?? "{}") })),
  };
}

const pending = { viewerAccepted: false, status: "Pending" };
const open = { viewerAccepted: true, status: "Approved" };

describe("live hub: visibility per subscriber (rules.md §4.2, §10.1)", () => {
  it("anonymous, Base, Whitelist, a member, Viewer and Admin each get exactly what a read shows them", async () => {
    const s = system();
    await s.hub.start();
    const callers = {
      anonymous: null,
      base: person(1, "Base"),
      whitelist: person(2, "Whitelist"),
      member: person(3, "Base"),
      viewer: person(4, "Viewer"),
      admin: person(5, "Admin"),
    };
    const clients = Object.fromEntries(
      Object.entries(callers).map(([name, caller]) => {
        const c = client();
        s.hub.subscribe(as(caller), c.connection, undefined);
        return [name, c];
      }),
    );
    s.project(1, pending, [3]);
    await s.change(1, "created", null);
    s.project(1, { viewerAccepted: true, status: "Pending" }, [3]);
    await s.change(1, "viewer-accepted", { ...pending, memberIds: [3] });
    s.project(1, open, [3]);
    await s.change(1, "status", { viewerAccepted: true, status: "Pending", memberIds: [3] });

    const seen = (name: string) => clients[name]!.messages().map((m) => `${m.change}`);
    expect(seen("anonymous")).toEqual(["status"]);
    expect(seen("base")).toEqual(["status"]);
    expect(seen("whitelist")).toEqual(["viewer-accepted", "status"]);
    expect(seen("member")).toEqual(["created", "viewer-accepted", "status"]);
    expect(seen("viewer")).toEqual(["created", "viewer-accepted", "status"]);
    expect(seen("admin")).toEqual(["created", "viewer-accepted", "status"]);
    // The project as a read answers it now, one serialized copy for everyone.
    expect(clients.anonymous!.messages()[0]).toMatchObject({ event: "project", project: { projectID: 1 } });
  });

  it("a project leaving a view arrives as deleted with its id only; one never seen sends nothing", async () => {
    const s = system();
    await s.hub.start();
    const anonymous = client();
    const invitee = client();
    s.hub.subscribe(as(null), anonymous.connection, undefined);
    s.hub.subscribe(as(person(9, "Base")), invitee.connection, undefined);
    // A new file takes an open project out of the public lists.
    s.project(2, pending);
    await s.change(2, "updated", { ...open, memberIds: [] });
    // Invited to a hidden project: it enters the invitee's view, and leaves it when declined.
    s.project(3, pending, [9]);
    await s.change(3, "members", { ...pending, memberIds: [] });
    s.project(3, pending, []);
    await s.change(3, "members", { ...pending, memberIds: [9] });
    await s.change(3, "deleted", { ...pending, memberIds: [] });

    expect(anonymous.messages()).toEqual([
      { event: "project", id: "0", change: "deleted", project: { projectID: 2 } },
    ]);
    expect(invitee.messages().map((m) => [m.project.projectID, m.change])).toEqual([
      [2, "deleted"],
      [3, "updated"],
      [3, "deleted"],
    ]);
  });

  it("invitations and role changes reach their user only; a revoked session's stream ends, a chain change refilters", async () => {
    const s = system();
    await s.hub.start();
    const ada = client();
    const bob = client();
    s.hub.subscribe(as(person(1, "Base")), ada.connection, undefined);
    s.hub.subscribe(as(person(2, "Viewer")), bob.connection, undefined);
    const invitation = { id: 5, projectID: 1, userID: 1, role: "Editor", isAccepted: false };
    await s.log.append("projects.invitation.changed", { change: "created", invitation });
    expect(ada.messages()).toEqual([{ event: "invitation", id: "0", change: "created", invitation }]);
    expect(bob.messages()).toEqual([]);

    // The chain made Ada Whitelist: her tokens still speak for her, with the new role at once.
    s.sessions.set(1, { role: "Whitelist", version: 2, revokedBelow: 0, deleted: false });
    await s.roleChanged(1, "Base", "Whitelist", { changedBy: "chain", version: 2 });
    s.project(4, { viewerAccepted: true, status: "Pending" });
    await s.change(4, "viewer-accepted", { ...pending, memberIds: [] });
    expect(
      ada
        .messages()
        .slice(1)
        .map((m) => m.event),
    ).toEqual(["role", "project"]);
    expect(ada.state.ended).toBe(false);

    // An admin demoted Bob: tokens issued before are revoked; his stream hears why, then ends.
    s.sessions.set(2, { role: "Base", version: 3, revokedBelow: 3, deleted: false });
    await s.roleChanged(2, "Viewer", "Base", { changedBy: "9", version: 3 });
    expect(bob.messages().at(-1)).toMatchObject({ event: "role", role: "Base", previousRole: "Viewer" });
    expect(bob.state.ended).toBe(true);
    expect(s.hub.size).toBe(1);
  });

  it("an admin's role change ends its user's stream even when the session read does not show it yet", async () => {
    const s = system();
    await s.hub.start();
    const carol = client();
    s.hub.subscribe(as(person(3, "Viewer")), carol.connection, undefined);
    // The event beat users' session update to Redis: the session still reads as before the change.
    s.sessions.set(3, { role: "Viewer", version: 1, revokedBelow: 0, deleted: false });
    await s.roleChanged(3, "Viewer", "Base", { changedBy: "9", version: 2 });
    expect(carol.messages()).toEqual([{ event: "role", id: "0", role: "Base", previousRole: "Viewer" }]);
    expect(carol.state.ended).toBe(true);
    expect(s.hub.size).toBe(0);
  });

  it("a stream acts with the role a request with its token gets from the same session, open or opened anew", async () => {
    const s = system();
    await s.hub.start();
    const signer = await createTestSigner();
    const noSession: SessionState = { role: null, version: 0, revokedBelow: 0, deleted: false };
    // The HTTP path: the token verified against the same session store the hub reads.
    const verifier = createTokenVerifier({
      getJwks: async () => signer.jwks,
      issuer: "fundraise-auth",
      audience: "fundraise",
      sessions: { get: async (userId) => s.sessions.get(userId) ?? noSession },
    });
    const cases: [string, UserRole | null, UserRole][] = [
      ["demoted by the chain (no revocation)", "Base", "Base"],
      ["still a Viewer", "Viewer", "Viewer"],
      ["promoted", "Admin", "Admin"],
      ["a session without a role", null, "Viewer"],
      // Not a role of this platform (a session written by a later layout): the token's claim stands.
      ["a role the platform does not know", "Auditor" as UserRole, "Viewer"],
    ];
    for (const [i, [name, sessionRole, expected]] of cases.entries()) {
      const userId = 20 + i;
      const token = await signer.sign({ userId, role: "Viewer", sv: 1 });
      const identity = async () => {
        const { caller, tokenVersion, expiresAt } = await verifier.inspect(token);
        return { caller, tokenVersion, expiresAt };
      };
      const open = client();
      s.hub.subscribe(await identity(), open.connection, undefined);
      s.sessions.set(userId, { role: sessionRole, version: 2, revokedBelow: 0, deleted: false });
      const anew = client();
      s.hub.subscribe(await identity(), anew.connection, undefined);
      const requestRole = (await verifier.verify(token)).role;
      expect(requestRole, name).toBe(expected);
      // A proposal no viewer accepted yet: only a reviewer (Admin, Viewer) sees it.
      s.project(100 + i, pending);
      await s.change(100 + i, "created", null);
      const delivered = isReviewer(requestRole) ? [100 + i] : [];
      const projectsOf = (c: typeof open) => c.messages().map((m) => m.project.projectID);
      expect(projectsOf(open), `${name}: open stream`).toEqual(delivered);
      expect(projectsOf(anew), `${name}: new stream`).toEqual(delivered);
    }
  });

  it("a stream ends when its token expires (the client signs in again and resumes)", async () => {
    const s = system();
    await s.hub.start();
    const c = client();
    s.hub.subscribe(
      { caller: person(8, "Base"), tokenVersion: 0, expiresAt: Date.now() + 50 },
      c.connection,
      undefined,
    );
    expect(c.state.ended).toBe(false);
    // Its timer fires 50 ms on, or later on a busy machine: waited for, not assumed after a fixed time.
    await expect.poll(() => c.state.ended, { timeout: 5_000, interval: 10 }).toBe(true);
  });

  it("a demotion whose event comes after other messages: the next one ends the stream, saying why", async () => {
    const s = system();
    await s.hub.start();
    const viewer = client();
    s.hub.subscribe(as(person(6, "Viewer")), viewer.connection, undefined);
    s.sessions.set(6, { role: "Base", version: 4, revokedBelow: 4, deleted: false });
    s.project(1, pending);
    await s.change(1, "created", null);
    expect(viewer.messages()).toEqual([
      { event: "role", id: undefined, role: "Base", previousRole: "Viewer" },
    ]);
    expect(viewer.state.ended).toBe(true);
  });

  it("a session revoked without any event of its own: the next message is judged by it, and the stream ends", async () => {
    const s = system();
    await s.hub.start();
    const viewer = client();
    s.hub.subscribe(as(person(7, "Viewer")), viewer.connection, undefined);
    s.sessions.set(7, { role: "Viewer", version: 5, revokedBelow: 5, deleted: false });
    s.project(1, pending);
    await s.change(1, "created", null);
    expect(viewer.messages()).toEqual([]);
    expect(viewer.state.ended).toBe(true);
  });
});

describe("live hub: resume, duplicates and cut-offs", () => {
  it("Last-Event-ID replays every missed message in order, each once, then continues live", async () => {
    const s = system();
    await s.hub.start();
    s.project(1, open);
    for (let i = 0; i < 5; i++) await s.change(1, "rated", { ...open, memberIds: [] });
    const back = client();
    s.hub.subscribe(as(null), back.connection, "1");
    await s.change(1, "updated", { ...open, memberIds: [] });
    // The replay and the "updated" (5) are through, however long the catch-up took on this machine.
    await expect.poll(() => back.messages().at(-1)?.id, { timeout: 5_000, interval: 10 }).toBe("5");
    await s.change(1, "rated", { ...open, memberIds: [] });
    await expect
      .poll(() => back.messages().map((m) => m.id), { timeout: 5_000, interval: 10 })
      .toEqual(["2", "3", "4", "5", "6"]);
    expect(back.sent[0]).toEqual({ retry: 2000 });
  });

  it("an unknown, malformed or expired position answers reset, then goes on live", async () => {
    const s = system();
    await s.hub.start();
    s.project(1, open);
    for (let i = 0; i < 3; i++) await s.change(1, "rated", { ...open, memberIds: [] });
    s.log.truncate(2);
    for (const position of ["0", "99", "abc"]) {
      const c = client();
      s.hub.subscribe(as(null), c.connection, position);
      await expect.poll(() => c.messages().length, { timeout: 5_000, interval: 10 }).toBeGreaterThan(0);
      expect(c.messages()).toEqual([{ event: "reset", id: "2", reason: expect.any(String) }]);
    }
  });

  it("a message published twice (an outbox relay's retry) is sent once", async () => {
    const s = system();
    await s.hub.start();
    const c = client();
    s.hub.subscribe(as(null), c.connection, undefined);
    s.project(1, open);
    await s.change(1, "rated", { ...open, memberIds: [] }, "m-1");
    await s.change(1, "rated", { ...open, memberIds: [] }, "m-1");
    expect(c.messages()).toHaveLength(1);
  });

  it("a batch holding only a duplicate leaves a signed-in stream open (no session is judged for nothing)", async () => {
    const s = system();
    await s.hub.start();
    const c = client();
    s.sessions.set(7, { role: "Base", version: 1, revokedBelow: 0, deleted: false });
    s.hub.subscribe(as(person(7, "Base")), c.connection, undefined);
    s.project(1, open);
    await s.change(1, "rated", { ...open, memberIds: [] }, "m-1");
    await s.change(1, "rated", { ...open, memberIds: [] }, "m-1");
    expect(c.state.ended).toBe(false);
    await s.change(1, "renamed", { ...open, memberIds: [] }, "m-2");
    expect(c.messages()).toHaveLength(2);
    expect(c.state.ended).toBe(false);
  });

  it("a slow subscriber is cut off past its buffer without holding up the others", async () => {
    const s = system({ maxBufferedBytes: 1000 });
    await s.hub.start();
    let slowBuffer = 0;
    const slow = client(() => (slowBuffer += 400));
    const fast = client();
    s.hub.subscribe(as(null), slow.connection, undefined);
    s.hub.subscribe(as(null), fast.connection, undefined);
    s.project(1, open);
    for (let i = 0; i < 5; i++) await s.change(1, "rated", { ...open, memberIds: [] });
    expect(slow.state.ended).toBe(true);
    expect(fast.messages()).toHaveLength(5);
    expect(s.hub.size).toBe(1);
  });

  it("each batch reads its projects once, whatever the number of subscribers", async () => {
    const s = system();
    await s.hub.start();
    for (let i = 0; i < 200; i++) s.hub.subscribe(as(person(i + 1, "Base")), client().connection, undefined);
    s.project(1, open);
    await s.change(1, "rated", { ...open, memberIds: [] });
    expect(s.viewsCalls()).toBe(1);
  });
});
