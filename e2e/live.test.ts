import { ApiError, createClient as createApiClient } from "@fundraise/client";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createClient } from "./client.ts";
import {
  createPeople,
  expectEnvelope,
  hexOf,
  newContent,
  publishEvaluation,
  type User,
} from "./projects-kit.ts";
import { type SharedSystem, sharedSystem } from "./shared.ts";

// GET /events on the running system through the typed client's subscribe: real writes through the projects service's outbox, the bus.live
// stream, and every gateway replica's hub; visibility by role, invitations, resume on another replica,
// a revoked session's stream ending.
let sys: SharedSystem;
const client = createClient(() => sys);
const people = createPeople(() => sys, client);
let owner: User;
let invitee: User;
let viewer: User;
let admin: User;
let whitelisted: User;
const streams: Array<{ close(): void }> = [];

beforeAll(async () => {
  sys = await sharedSystem();
  [owner, invitee, viewer, admin, whitelisted] = await Promise.all([
    people.newUser("Base"),
    people.newUser("Base"),
    people.newUser("Viewer"),
    people.newUser("Admin"),
    people.newUser("Whitelist"),
  ]);
});
afterAll(() => {
  for (const s of streams) s.close();
});

interface Message {
  id?: string | undefined;
  event: string;
  data: Record<string, unknown>;
}

/**
 * A subscription of `user` (anonymous without) through @fundraise/client on a gateway replica: its
 * messages as they come, the last id, and how it stopped (an ApiError once the gateway refuses it).
 */
function listen(user: User | null, options: { base?: string; lastEventId?: string; ticket?: string } = {}) {
  const api = createApiClient({ baseUrl: options.base ?? sys.gatewayUrl });
  const messages: Message[] = [];
  const state: { ended: boolean; error: unknown; opened: Promise<void> } = {
    ended: false,
    error: undefined,
    opened: Promise.resolve(),
  };
  const keep = (event: string) => (data: unknown, meta: { id: string | undefined }) =>
    messages.push({ id: meta.id, event, data: data as Record<string, unknown> });
  let opened: () => void = () => {};
  state.opened = new Promise((resolve) => {
    opened = resolve;
  });
  const subscription = api.subscribe(
    {
      project: keep("project"),
      invitation: keep("invitation"),
      role: keep("role"),
      reset: keep("reset"),
      chain: keep("chain"),
      open: () => opened(),
      error: (error) => {
        state.error = error;
      },
    },
    {
      ...(user ? { token: user.token } : {}),
      ...(options.lastEventId === undefined ? {} : { lastEventId: options.lastEventId }),
      ...(options.ticket === undefined ? {} : { ticket: options.ticket }),
    },
  );
  void subscription.closed.then(() => {
    state.ended = true;
  });
  const stream = { messages, state, subscription, close: () => subscription.close() };
  streams.push(stream);
  return stream;
}

/** Waits until `check` holds (the path is asynchronous: outbox, broker, stream, hub). */
const eventually = (check: () => void) => vi.waitFor(check, { timeout: 10_000, interval: 50 });

const projectOf = (m: Message) => (m.data.project as { projectID: number }).projectID;
const about = (messages: Message[], projectID: number) =>
  messages.filter((m) => m.event === "project" && projectOf(m) === projectID);
const changes = (messages: Message[], projectID: number) =>
  about(messages, projectID).map((m) => m.data.change);

async function addProject(user: User, label: string) {
  const content = newContent(label, false);
  const res = await client.api("POST", "/Project/Add", {
    authorization: `Bearer ${user.token}`,
    body: { fileHex: hexOf(content.file), projectName: `${label} ${Math.random().toString(36).slice(2, 8)}` },
  });
  expectEnvelope(res, 201, "Add");
  return res.body.data as { projectID: number; fileHash: string };
}

describe("live updates on the running system", () => {
  it("each caller's stream follows a proposal exactly as their reads show it", async () => {
    const anonymous = listen(null);
    const own = listen(owner);
    const view = listen(viewer);
    const adm = listen(admin);
    const white = listen(whitelisted);
    await Promise.all([anonymous, own, view, adm, white].map((s) => s.state.opened));
    const { projectID: id, fileHash } = await addProject(owner, "live proposal");
    await eventually(() => {
      for (const s of [own, view, adm]) expect(changes(s.messages, id)).toEqual(["created"]);
    });
    const accept = await client.api("PUT", `/Project/ViewerReply/${id}/true`, {
      authorization: `Bearer ${viewer.token}`,
    });
    expectEnvelope(accept, 200, "ViewerReply");
    await eventually(() => expect(changes(white.messages, id)).toEqual(["viewer-accepted"]));
    await publishEvaluation(sys, fileHash, true);
    await eventually(() => expect(changes(anonymous.messages, id)).toEqual(["status"]));
    const [status] = about(anonymous.messages, id);
    // The project as GET /Project/Get/{id} answers the anonymous caller now.
    const read = await client.api("GET", `/Project/Get/${id}`, {});
    expect(status?.data.project).toEqual(read.body.data);
    expect(status?.data.indexedBlock).toBe(1);
    await eventually(() => {
      for (const s of [own, view, adm])
        expect(changes(s.messages, id)).toEqual(["created", "viewer-accepted", "status"]);
    });
    // How far the indexer is, without an id (the chain's progress is a state, not an event).
    await eventually(() => expect(anonymous.messages.some((m) => m.event === "chain")).toBe(true));
    const chain = anonymous.messages.find((m) => m.event === "chain");
    expect(chain?.id).toBeUndefined();
    expect(chain?.data.headBlock).toBeGreaterThanOrEqual(Number(chain?.data.indexedBlock));
  });

  it("an invitation reaches its invitee with the hidden project; the decline takes it out of their view", async () => {
    // A ticket, as a browser's EventSource would use it.
    const ticket = await createApiClient({ baseUrl: sys.gatewayUrl, token: invitee.token }).POST(
      "/events/ticket",
    );
    const stream = listen(null, { ticket: String(ticket) });
    // The owner's stream on the same replica: the hub decides one batch for every stream at once, so once
    // the owner has the creation, the invitee's stream has had it decided (before the invitation exists).
    const own = listen(owner);
    await Promise.all([stream.state.opened, own.state.opened]);
    const { projectID: id } = await addProject(owner, "live invitation");
    await eventually(() => expect(changes(own.messages, id)).toEqual(["created"]));
    // A hidden project's creation never reaches a user it was not visible to.
    expect(changes(stream.messages, id)).toEqual([]);
    const invite = await client.api("PUT", "/User/Invite/", {
      authorization: `Bearer ${owner.token}`,
      body: { projectID: id, username: invitee.username, role: "Editor" },
    });
    expectEnvelope(invite, 201, "invite");
    await eventually(() => {
      expect(stream.messages.filter((m) => m.event === "invitation").map((m) => m.data.change)).toEqual([
        "created",
      ]);
      expect(changes(stream.messages, id)).toEqual(["updated"]);
    });
    const decline = await client.api("POST", "/User/InvitationReply", {
      authorization: `Bearer ${invitee.token}`,
      body: { projectID: id, isAccepted: false },
    });
    expectEnvelope(decline, 200, "decline");
    await eventually(() => expect(changes(stream.messages, id)).toEqual(["updated", "deleted"]));
  });

  it("a client that reconnects to another replica with Last-Event-ID gets every missed message once", async () => {
    const [first, second] = sys.gatewayUrls;
    const before = listen(admin, { base: first });
    await before.state.opened;
    const { projectID: a } = await addProject(owner, "live before");
    await eventually(() => expect(changes(before.messages, a)).toEqual(["created"]));
    const lastId = before.subscription.lastEventId;
    before.close();
    const missed = [await addProject(owner, "live missed 1"), await addProject(owner, "live missed 2")];
    const after = listen(admin, {
      base: second ?? first,
      ...(lastId === undefined ? {} : { lastEventId: lastId }),
    });
    await after.state.opened;
    const { projectID: live } = await addProject(owner, "live after");
    // The admin sees every project: other files' Adds, running at the same time, are left out.
    const ours = [...missed.map((p) => p.projectID), live];
    await eventually(() => {
      const created = after.messages.filter((m) => m.data.change === "created").map(projectOf);
      expect(created.filter((id) => ours.includes(id))).toEqual(ours);
    });
    const ids = after.messages.filter((m) => m.id !== undefined).map((m) => Number(m.id));
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("a position the log does not hold answers reset, then the stream goes on live", async () => {
    const member = await people.newUser("Base");
    const stream = listen(member, { lastEventId: "999999999999" });
    await stream.state.opened;
    await eventually(() => expect(stream.messages[0]?.event).toBe("reset"));
    const { projectID: id } = await addProject(member, "after a reset");
    await eventually(() => expect(changes(stream.messages, id)).toEqual(["created"]));
  });

  it("an admin's role change tells the user's stream, which then ends (the token is revoked)", async () => {
    const member = await people.newUser("Base");
    const stream = listen(member);
    await stream.state.opened;
    const change = await client.api("PATCH", `/user/updaterole/${member.wallet.address}/Whitelist`, {
      authorization: `Bearer ${admin.token}`,
    });
    expectEnvelope(change, 200, "updaterole");
    await eventually(() => {
      expect(stream.messages.filter((m) => m.event === "role").map((m) => m.data)).toEqual([
        { role: "Whitelist", previousRole: "Base" },
      ]);
      // Its reconnection is refused: the token no longer speaks for the account.
      expect(stream.state.ended).toBe(true);
      expect(stream.state.error).toBeInstanceOf(ApiError);
      expect((stream.state.error as ApiError).status).toBe(401);
    });
  });
});
