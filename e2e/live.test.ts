import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

// GET /events on the running system: real writes through the projects service's outbox, the bus.live
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
  id?: string;
  event?: string;
  data?: Record<string, unknown>;
}

/** A stream of `user` (anonymous without) on a gateway replica: its messages, parsed, as they come. */
async function listen(user: User | null, options: { base?: string; lastEventId?: string } = {}) {
  const stop = new AbortController();
  const headers: Record<string, string> = user ? { authorization: `Bearer ${user.token}` } : {};
  if (options.lastEventId !== undefined) headers["last-event-id"] = options.lastEventId;
  const response = await fetch(`${options.base ?? sys.gatewayUrl}/events`, { headers, signal: stop.signal });
  expect(response.status).toBe(200);
  const messages: Message[] = [];
  const state = { ended: false, lastId: undefined as string | undefined };
  void (async () => {
    let buffer = "";
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += Buffer.from(chunk).toString("utf8");
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const fields = Object.fromEntries(
            buffer
              .slice(0, end)
              .split("\n")
              .flatMap((line) => {
                const m = /^(\w+): ?(.*)$/.exec(line);
                return m ? [[m[1], m[2]]] : [];
              }),
          );
          buffer = buffer.slice(end + 2);
          if (fields.id !== undefined) state.lastId = fields.id;
          if (fields.event)
            messages.push({ id: fields.id, event: fields.event, data: JSON.parse(fields.data ?? "{}") });
        }
      }
    } catch {
      // closed by the test
    }
    state.ended = true;
  })();
  const stream = { messages, state, close: () => stop.abort() };
  streams.push(stream);
  return stream;
}

/** Waits until `check` holds (the path is asynchronous: outbox, broker, stream, hub). */
async function eventually(check: () => void, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

const about = (messages: Message[], projectID: number) =>
  messages.filter(
    (m) => m.event === "project" && (m.data?.project as { projectID: number }).projectID === projectID,
  );
const changes = (messages: Message[], projectID: number) =>
  about(messages, projectID).map((m) => m.data?.change);

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
    const [anonymous, own, view, adm, white] = await Promise.all([
      listen(null),
      listen(owner),
      listen(viewer),
      listen(admin),
      listen(whitelisted),
    ]);
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
    expect(status?.data?.project).toEqual(read.body.data);
    expect(status?.data?.indexedBlock).toBe(1);
    await eventually(() => {
      for (const s of [own, view, adm])
        expect(changes(s.messages, id)).toEqual(["created", "viewer-accepted", "status"]);
    });
  });

  it("an invitation reaches its invitee with the hidden project; the decline takes it out of their view", async () => {
    const stream = await listen(invitee);
    const { projectID: id } = await addProject(owner, "live invitation");
    const invite = await client.api("PUT", "/User/Invite/", {
      authorization: `Bearer ${owner.token}`,
      body: { projectID: id, username: invitee.username, role: "Editor" },
    });
    expectEnvelope(invite, 201, "invite");
    await eventually(() => {
      expect(stream.messages.filter((m) => m.event === "invitation").map((m) => m.data?.change)).toEqual([
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
    const before = await listen(admin, { base: first });
    const { projectID: a } = await addProject(owner, "live before");
    await eventually(() => expect(changes(before.messages, a)).toEqual(["created"]));
    const lastId = before.state.lastId;
    before.close();
    const missed = [await addProject(owner, "live missed 1"), await addProject(owner, "live missed 2")];
    const after = await listen(admin, { base: second ?? first, lastEventId: lastId });
    const { projectID: live } = await addProject(owner, "live after");
    await eventually(() => {
      const created = after.messages.filter((m) => m.data?.change === "created");
      expect(created.map((m) => (m.data?.project as { projectID: number }).projectID)).toEqual([
        ...missed.map((p) => p.projectID),
        live,
      ]);
    });
    const ids = after.messages.filter((m) => m.id !== undefined).map((m) => Number(m.id));
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("an admin's role change tells the user's stream, which then ends (the token is revoked)", async () => {
    const member = await people.newUser("Base");
    const stream = await listen(member);
    const change = await client.api("PATCH", `/user/updaterole/${member.wallet.address}/Whitelist`, {
      authorization: `Bearer ${admin.token}`,
    });
    expectEnvelope(change, 200, "updaterole");
    await eventually(() => {
      expect(stream.messages.filter((m) => m.event === "role").map((m) => m.data)).toEqual([
        { role: "Whitelist", previousRole: "Base" },
      ]);
      expect(stream.state.ended).toBe(true);
    });
  });
});
