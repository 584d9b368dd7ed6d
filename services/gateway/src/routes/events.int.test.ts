import net from "node:net";
import { ProjectsRpc } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createHarness, type Harness } from "../test/harness.ts";
import { projectDto } from "../test/route-samples.ts";

// GET /events and POST /events/ticket over real HTTP (the gateway listening), on the in-memory bus and
// live log: the wire (headers, framing, 401s before the stream), tickets, and Last-Event-ID.

let h: Harness;
let base: string;
const open = { viewerAccepted: true, status: "Approved" };

beforeAll(async () => {
  h = await createHarness();
  await h.bus.serve(ProjectsRpc.views, async ({ projectIds }) =>
    projectIds.map((id) => ({ project: projectDto(id), memberIds: [] })),
  );
  base = await h.app.listen({ port: 0, host: "127.0.0.1" });
});
afterAll(() => h.close());

interface Message {
  id?: string;
  event?: string;
  data?: string;
  retry?: string;
}

/** Opens the stream and collects its messages (comments left out) until `stop` aborts it. */
async function open_(path: string, headers: Record<string, string> = {}) {
  const stop = new AbortController();
  const response = await fetch(`${base}${path}`, { headers, signal: stop.signal });
  const messages: Message[] = [];
  let waiters: Array<() => void> = [];
  if (response.headers.get("content-type")?.startsWith("text/event-stream")) {
    void (async () => {
      let buffer = "";
      try {
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          buffer += Buffer.from(chunk).toString("utf8");
          let end = buffer.indexOf("\n\n");
          while (end >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const message: Message = {};
            for (const line of block.split("\n")) {
              const m = /^(\w+): ?(.*)$/.exec(line);
              if (m) message[m[1] as keyof Message] = m[2];
            }
            if (Object.keys(message).length > 0) messages.push(message);
            end = buffer.indexOf("\n\n");
          }
          for (const wake of waiters) wake();
          waiters = [];
        }
      } catch {
        // aborted
      }
    })();
  }
  const until = async (count: number) => {
    const deadline = Date.now() + 3000;
    while (messages.length < count && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
    return messages;
  };
  return { response, messages, until, close: () => stop.abort() };
}

const rated = (projectId: number) =>
  h.liveLog.append("projects.project.changed", {
    projectId,
    change: "rated",
    before: { ...open, memberIds: [] },
  });

/** A ticket for `token` from POST /events/ticket (expects 200). */
async function ticketFor(token: string): Promise<string> {
  const answer = await fetch(`${base}/events/ticket`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
  });
  expect(answer.status).toBe(200);
  return ((await answer.json()) as { data: string }).data;
}

describe("GET /events", () => {
  it("streams to anonymous callers with the headers a proxy needs, retry advice first", async () => {
    const stream = await open_("/events");
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(stream.response.headers.get("cache-control")).toBe("no-store");
    expect(stream.response.headers.get("x-accel-buffering")).toBe("no");
    expect(stream.response.headers.get("content-encoding")).toBeNull();
    await stream.until(1);
    await rated(41);
    const [first, second] = await stream.until(2);
    expect(first?.retry).toBe("2000");
    expect(second).toMatchObject({ event: "project" });
    expect(JSON.parse(second?.data ?? "")).toEqual({ change: "rated", project: projectDto(41) });
    stream.close();
  });

  it("a bad token, a malformed header or a bad ticket is 401 in the envelope before any stream", async () => {
    for (const headers of [{ authorization: "Bearer not-a-jwt" }, { authorization: "Basic abc" }]) {
      const { response } = await open_("/events", headers);
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ success: false, data: null });
    }
    const { response } = await open_(`/events?ticket=${"x".repeat(43)}`);
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ success: false, message: expect.stringMatching(/ticket/) });
  });

  it("a ticket identifies a stream once; the web client's Bearer undefined is anonymous", async () => {
    const token = await h.signer.sign({ userId: 3, role: "Admin" });
    const answer = await fetch(`${base}/events/ticket`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(answer.status).toBe(200);
    const { data: ticket } = (await answer.json()) as { data: string };
    expect(ticket).toMatch(/^[\w-]{43}$/);
    const first = await open_(`/events?ticket=${ticket}`);
    expect(first.response.status).toBe(200);
    first.close();
    const again = await open_(`/events?ticket=${ticket}`);
    expect(again.response.status).toBe(401);
    const anonymous = await fetch(`${base}/events/ticket`, {
      method: "POST",
      headers: { authorization: "Bearer undefined" },
    });
    expect(anonymous.status).toBe(401);
    const stream = await open_("/events", { authorization: "Bearer undefined" });
    expect(stream.response.status).toBe(200);
    stream.close();
  });

  it("HEAD /events answers at once (no stream to describe: 404, as any method a route lacks) and spends no ticket", async () => {
    const token = await h.signer.sign({ userId: 3, role: "Base" });
    const ticket = await ticketFor(token);
    for (const path of ["/events", `/events?ticket=${ticket}`]) {
      for (const authorization of [undefined, `Bearer ${token}`]) {
        const head = await fetch(`${base}${path}`, {
          method: "HEAD",
          headers: authorization ? { authorization } : {},
          signal: AbortSignal.timeout(5000),
        });
        expect(head.status, `HEAD ${path}`).toBe(404);
      }
    }
    const stream = await open_(`/events?ticket=${ticket}`);
    expect(stream.response.status).toBe(200);
    stream.close();
  });

  it("a ticket lives 30 s in Redis under its hash, never under itself", async () => {
    const ticket = await ticketFor(await h.signer.sign({ userId: 4, role: "Base" }));
    const keys = await h.redis.keys(`${h.prefix}live:ticket:*`);
    expect(keys.some((k) => k.includes(ticket))).toBe(false);
    const ttls = await Promise.all(keys.map((k) => h.redis.pttl(k)));
    for (const ttl of ttls) expect(ttl).toBeGreaterThan(25_000);
    for (const ttl of ttls) expect(ttl).toBeLessThanOrEqual(30_000);
  });

  it("closing the gateway (SIGTERM) ends its streams at once, so clients reconnect elsewhere", async () => {
    const other = await createHarness();
    const url = await other.app.listen({ port: 0, host: "127.0.0.1" });
    const response = await fetch(`${url}/events`);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const started = Date.now();
    const closing = other.close();
    let done = false;
    while (!done) done = (await reader.read()).done;
    // Ended by the close, not left open until the client gives up: seconds, on a slow machine too.
    expect(Date.now() - started).toBeLessThan(10_000);
    await closing;
  });

  it("Last-Event-ID (header or query) replays what was missed, in order, then goes on live", async () => {
    const start = await open_("/events");
    await rated(1);
    const [, seen] = await start.until(2);
    start.close();
    await rated(2);
    await rated(3);
    for (const resume of [
      { path: "/events", headers: { "last-event-id": seen?.id ?? "" } as Record<string, string> },
      { path: `/events?lastEventId=${seen?.id}`, headers: {} as Record<string, string> },
    ]) {
      const stream = await open_(resume.path, resume.headers);
      const messages = await stream.until(3);
      expect(messages.slice(1).map((m) => JSON.parse(m.data ?? "").project.projectID)).toEqual([2, 3]);
      stream.close();
    }
  });
});

describe("GET /events: a subscriber that stops reading", () => {
  it("is cut off past its buffer while another on the same gateway gets every message", async () => {
    const small = await createHarness({ LIVE_MAX_BUFFERED_BYTES: "262144" });
    // Large projects, so the kernel's socket buffers fill with few messages.
    const markDown = "x".repeat(40_000);
    await small.bus.serve(ProjectsRpc.views, async ({ projectIds }) =>
      projectIds.map((id) => ({ project: { ...projectDto(id), markDown }, memberIds: [] })),
    );
    const url = await small.app.listen({ port: 0, host: "127.0.0.1" });
    try {
      const { port } = new URL(url);
      // The slow one: asks for the stream over a raw socket, then never reads.
      const slow = net.connect(Number(port), "127.0.0.1");
      await new Promise((resolve) => slow.once("connect", resolve));
      slow.write(`GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n`);
      await new Promise((resolve) => slow.once("data", resolve));
      slow.pause();
      const closed = new Promise<void>((resolve) => slow.once("close", () => resolve()));
      const fast = await fetch(`${url}/events`);
      const reader = (fast.body as ReadableStream<Uint8Array>).getReader();
      let received = 0;
      const reading = (async () => {
        const decoder = new TextDecoder();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          received += (decoder.decode(value, { stream: true }).match(/event: project/g) ?? []).length;
        }
      })();
      const total = 800;
      for (let i = 0; i < total; i++) {
        await small.liveLog.append("projects.project.changed", {
          projectId: i + 1,
          change: "rated",
          before: { ...open, memberIds: [] },
        });
        // Changes come over the network, not in one turn of the loop: the readers get to read between.
        await new Promise((resolve) => setImmediate(resolve));
      }
      await vi.waitFor(() => expect(received).toBe(total), { timeout: 10_000 });
      // The hub let the slow one go; once it reads again it finds its stream ended by the server.
      expect(small.app.live.size).toBe(1);
      slow.resume();
      await closed;
      await reader.cancel();
      await reading;
      slow.destroy();
    } finally {
      await small.close();
    }
  });
});
