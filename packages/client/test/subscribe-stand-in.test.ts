// subscribe() against a STAND-IN for the gateway's `GET /events`: a node:http server in this file that
// speaks the stream's wire contract (ids, event types, one-line JSON data, comments, retry:, a 401
// envelope before the stream). It is not the gateway; the test decides what each connection gets.
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { projectDto } from "@fundraise/gateway/src/test/route-samples.ts";
import { afterEach, beforeEach, describe, expect, expectTypeOf, it, vi } from "vitest";
import {
  ApiError,
  type ChainMessage,
  createClient,
  type InvitationMessage,
  type ProjectDTO,
  type ProjectMessage,
  type ReconnectInfo,
  type RoleMessage,
} from "../src/index.ts";

/** One connection to the stand-in, held open until the test answers it. */
interface Connection {
  req: IncomingMessage;
  res: ServerResponse;
  at: number;
  url: URL;
  /** 200 text/event-stream, then the raw SSE text given (more with `write`). */
  accept(text?: string): void;
  write(text: string): void;
  /** The server cuts the connection (no clean end). */
  drop(): void;
  /** The envelope with this status, before any stream. */
  reject(status: number, message: string, code?: string): void;
  /** Resolves when the client has gone (it closed or aborted its request). */
  gone: Promise<void>;
}

class StandIn {
  readonly server: Server;
  readonly connections: Connection[] = [];
  private waiting: ((connection: Connection) => void)[] = [];

  constructor() {
    this.server = createServer((req, res) => {
      const gone = new Promise<void>((resolve) => res.on("close", () => resolve()));
      const connection: Connection = {
        req,
        res,
        at: Date.now(),
        url: new URL(req.url ?? "/", "http://stand-in"),
        gone,
        accept(text = "") {
          res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
          res.write(text);
        },
        write: (text) => res.write(text),
        drop: () => res.destroy(),
        reject(status, message, code) {
          res.writeHead(status, {
            "content-type": "application/json; charset=utf-8",
            ...(code ? { "x-error-code": code } : {}),
          });
          res.end(JSON.stringify({ data: null, success: false, message }));
        },
      };
      this.connections.push(connection);
      for (const waiter of this.waiting.splice(0)) waiter(connection);
    });
  }

  async start(): Promise<string> {
    this.server.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The nth connection (0-based), once it has arrived. */
  connection(n: number, timeoutMs = 5000): Promise<Connection> {
    const arrived = this.connections[n];
    if (arrived) return Promise.resolve(arrived);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`connection ${n} did not arrive`)), timeoutMs);
      const check = () => {
        const c = this.connections[n];
        if (c) {
          clearTimeout(timer);
          resolve(c);
        } else this.waiting.push(check);
      };
      this.waiting.push(check);
    });
  }

  async stop(): Promise<void> {
    for (const c of this.connections) c.res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// The gateway's ProjectDTO fixture, as a Pending proposal.
const project = {
  ...projectDto(4, { projectName: "Solar roofs" }),
  status: "Pending",
  viewerAccepted: false,
} satisfies ProjectDTO;

const message = (fields: { id?: string; event: string; data: unknown }) =>
  `${fields.id === undefined ? "" : `id: ${fields.id}\n`}event: ${fields.event}\ndata: ${JSON.stringify(fields.data)}\n\n`;

let standIn: StandIn;
let baseUrl: string;
beforeEach(async () => {
  standIn = new StandIn();
  baseUrl = await standIn.start();
});
afterEach(() => standIn.stop());

describe("subscribe against a stand-in for the gateway's /events stream", () => {
  it("parses every message type into its typed handler, with its id; skips comments and unknown types", async () => {
    const client = createClient({ baseUrl, token: "jwt-1" });
    const got: [string, unknown, string | undefined][] = [];
    let opened = 0;
    const all = new Promise<void>((resolve) => {
      const subscription = client.subscribe({
        open: () => opened++,
        project(data, meta) {
          expectTypeOf(data).toEqualTypeOf<ProjectMessage>();
          if (data.change !== "deleted") expectTypeOf(data.project).toEqualTypeOf<ProjectDTO>();
          got.push(["project", data, meta.id]);
        },
        invitation(data, meta) {
          expectTypeOf(data).toEqualTypeOf<InvitationMessage>();
          got.push(["invitation", data, meta.id]);
        },
        role(data, meta) {
          expectTypeOf(data).toEqualTypeOf<RoleMessage>();
          got.push(["role", data, meta.id]);
        },
        chain(data, meta) {
          expectTypeOf(data).toEqualTypeOf<ChainMessage>();
          got.push(["chain", data, meta.id]);
        },
        reset(data, meta) {
          got.push(["reset", data, meta.id]);
          subscription.close();
          resolve();
        },
      });
    });
    const c = await standIn.connection(0);
    expect(c.req.headers.authorization).toBe("Bearer jwt-1");
    expect(c.req.headers.accept).toBe("text/event-stream");
    expect(c.req.headers["last-event-id"]).toBeUndefined();
    expect(c.url.pathname).toBe("/events");
    const invitation = { id: 3, projectID: 4, userID: 7, role: "Editor", isAccepted: false };
    c.accept(`retry: 2000\n${message({ id: "a1", event: "project", data: { change: "created", project } })}`);
    c.write(": heartbeat\n\n");
    c.write(message({ id: "a2", event: "project", data: { change: "deleted", project: { projectID: 4 } } }));
    c.write(message({ id: "a3", event: "invitation", data: { change: "created", invitation } }));
    c.write(message({ id: "a4", event: "someday", data: { ignored: true } }));
    // One message split across writes, the way a proxy may cut it.
    const role = message({ id: "a5", event: "role", data: { role: "Viewer", previousRole: "Base" } });
    c.write(role.slice(0, 9));
    await sleep(10);
    c.write(role.slice(9));
    c.write(message({ event: "chain", data: { indexedBlock: 41, headBlock: 43 } }));
    c.write(message({ id: "a6", event: "reset", data: { reason: "position unknown" } }));
    await all;
    expect(opened).toBe(1);
    expect(got).toEqual([
      ["project", { change: "created", project }, "a1"],
      ["project", { change: "deleted", project: { projectID: 4 } }, "a2"],
      ["invitation", { change: "created", invitation }, "a3"],
      ["role", { role: "Viewer", previousRole: "Base" }, "a5"],
      ["chain", { indexedBlock: 41, headBlock: 43 }, undefined],
      ["reset", { reason: "position unknown" }, "a6"],
    ]);
  });

  it("reconnects after the server drops it, with Last-Event-ID = the last id, an id-only heartbeat's included", async () => {
    const client = createClient({ baseUrl, token: "jwt-1" });
    const ids: (string | undefined)[] = [];
    const reconnects: ReconnectInfo[] = [];
    const subscription = client.subscribe(
      { project: (_data, meta) => ids.push(meta.id), reconnecting: (info) => reconnects.push(info) },
      { lastEventId: "start-3", retryMs: 10 },
    );
    const first = await standIn.connection(0);
    expect(first.req.headers["last-event-id"]).toBe("start-3");
    first.accept(message({ id: "5", event: "project", data: { change: "rated", project } }));
    // A chain message has no id: it leaves the last id as it was.
    first.write(message({ event: "chain", data: { indexedBlock: 1, headBlock: 1 } }));
    first.write(": keep-alive\nid: 7\n\n");
    await expect.poll(() => subscription.lastEventId).toBe("7");
    // The token changed in between (signed in again): the next connection uses the new one.
    client.setToken("jwt-2");
    first.drop();
    const second = await standIn.connection(1);
    expect(second.req.headers["last-event-id"]).toBe("7");
    expect(second.req.headers.authorization).toBe("Bearer jwt-2");
    second.accept(message({ event: "chain", data: { indexedBlock: 2, headBlock: 2 } }));
    second.res.end();
    // A clean end of the stream is a reconnect too, still from id 7.
    const third = await standIn.connection(2);
    expect(third.req.headers["last-event-id"]).toBe("7");
    expect(ids).toEqual(["5"]);
    expect(reconnects).toHaveLength(2);
    expect(reconnects[0]).toMatchObject({ failures: 0 });
    subscription.close();
    await subscription.closed;
  });

  it("waits as long as the server's retry: says, not its own default", async () => {
    let received = false;
    const subscription = createClient({ baseUrl }).subscribe(
      {
        chain: () => {
          received = true;
        },
      },
      { retryMs: 60_000 },
    );
    const first = await standIn.connection(0);
    first.accept(
      `retry: 300\n${message({ id: "1", event: "chain", data: { indexedBlock: 1, headBlock: 1 } })}`,
    );
    // The client has read the retry: line (the message after it arrived), however busy the machine.
    await vi.waitFor(() => expect(received).toBe(true), { timeout: 5_000 });
    const droppedAt = Date.now();
    first.drop();
    const second = await standIn.connection(1, 10_000);
    const waited = second.at - droppedAt;
    // 300 ms plus up to 10% of jitter, plus the time to connect; the client's own default is 60 s.
    expect(waited).toBeGreaterThanOrEqual(290);
    expect(waited).toBeLessThan(30_000);
    subscription.close();
    await subscription.closed;
  });

  it("backs off while connections fail (5xx), and 5xx is no reason to stop", async () => {
    const reconnects: ReconnectInfo[] = [];
    const subscription = createClient({ baseUrl }).subscribe(
      { reconnecting: (info) => reconnects.push(info) },
      { retryMs: 20, maxRetryMs: 100 },
    );
    for (let n = 0; n < 4; n++) {
      (await standIn.connection(n)).reject(503, "Not ready.", "SERVICE_UNAVAILABLE");
    }
    const fifth = await standIn.connection(4);
    fifth.accept(": hello\n\n");
    expect(reconnects.map((r) => r.failures)).toEqual([1, 2, 3, 4]);
    const delays = reconnects.map((r) => r.delayMs);
    expect(delays[0]).toBeGreaterThanOrEqual(20);
    expect(delays[1]).toBeGreaterThanOrEqual(20);
    expect(delays[2]).toBeGreaterThanOrEqual(80);
    expect(delays[3]).toBeLessThanOrEqual(110);
    expect(reconnects[0]?.error).toBeInstanceOf(ApiError);
    expect(reconnects[0]?.error).toMatchObject({ status: 503, code: "SERVICE_UNAVAILABLE" });
    subscription.close();
    await subscription.closed;
  });

  it("a 401 before the stream: handlers.error gets an ApiError and nothing reconnects", async () => {
    const errors: unknown[] = [];
    const reconnects: ReconnectInfo[] = [];
    const subscription = createClient({ baseUrl, token: "expired" }).subscribe(
      { error: (e) => errors.push(e), reconnecting: (info) => reconnects.push(info) },
      { retryMs: 10 },
    );
    (await standIn.connection(0)).reject(401, "The token has expired.", "TOKEN_EXPIRED");
    await subscription.closed;
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(ApiError);
    expect(errors[0]).toMatchObject({
      status: 401,
      code: "TOKEN_EXPIRED",
      message: "The token has expired.",
      body: { data: null, success: false, message: "The token has expired." },
    });
    await sleep(100);
    expect(standIn.connections).toHaveLength(1);
    expect(reconnects).toEqual([]);
  });

  it("close() ends an open stream and no reconnection follows", async () => {
    const subscription = createClient({ baseUrl }).subscribe({}, { retryMs: 10 });
    const c = await standIn.connection(0);
    c.accept(": open\n\n");
    await sleep(20);
    subscription.close();
    await subscription.closed;
    await c.gone;
    await sleep(100);
    expect(standIn.connections).toHaveLength(1);
  });

  it("an aborted signal ends it too, even while it waits to reconnect", async () => {
    const controller = new AbortController();
    const subscription = createClient({ baseUrl }).subscribe(
      {},
      { retryMs: 60_000, signal: controller.signal },
    );
    (await standIn.connection(0)).reject(500, "Internal error.");
    await sleep(50);
    controller.abort();
    await subscription.closed;
    const never = createClient({ baseUrl }).subscribe({}, { signal: AbortSignal.abort() });
    await never.closed;
    expect(standIn.connections).toHaveLength(1);
  });

  it("a ticket goes as ?ticket=, without the token; a function gives a fresh one per connection", async () => {
    let issued = 0;
    const subscription = createClient({ baseUrl, token: "jwt-1" }).subscribe(
      {},
      { ticket: async () => `ticket-${++issued}`, retryMs: 10 },
    );
    const first = await standIn.connection(0);
    expect(first.url.searchParams.get("ticket")).toBe("ticket-1");
    expect(first.req.headers.authorization).toBeUndefined();
    first.accept("id: 9\n\n");
    await expect.poll(() => subscription.lastEventId).toBe("9");
    first.drop();
    const second = await standIn.connection(1);
    expect(second.url.searchParams.get("ticket")).toBe("ticket-2");
    expect(second.req.headers["last-event-id"]).toBe("9");
    subscription.close();
    await subscription.closed;
  });

  it("data that is not JSON and a throwing handler are reported; the stream goes on", async () => {
    const errors: unknown[] = [];
    const chains: ChainMessage[] = [];
    const subscription = createClient({ baseUrl }).subscribe({
      error: (e) => errors.push(e),
      project: () => {
        throw new Error("handler bug");
      },
      chain: (data) => chains.push(data),
    });
    const c = await standIn.connection(0);
    c.accept("id: 1\nevent: project\ndata: {not json\n\n");
    c.write(message({ id: "2", event: "project", data: { change: "created", project } }));
    c.write(message({ event: "chain", data: { indexedBlock: 5, headBlock: 6 } }));
    await expect.poll(() => chains.length).toBe(1);
    expect(errors.map((e) => (e as Error).message)).toEqual([
      'A "project" message (id 1) whose data is not JSON was skipped.',
      "handler bug",
    ]);
    expect(subscription.lastEventId).toBe("2");
    subscription.close();
    await subscription.closed;
  });

  it("a stream silent past idleTimeoutMs is taken as dead and reconnected", async () => {
    const reconnects: ReconnectInfo[] = [];
    const subscription = createClient({ baseUrl }).subscribe(
      { reconnecting: (info) => reconnects.push(info) },
      { idleTimeoutMs: 100, retryMs: 10 },
    );
    (await standIn.connection(0)).accept("id: 1\n\n");
    await standIn.connection(1);
    expect(reconnects[0]?.error).toEqual(new Error("No data for 100 ms."));
    subscription.close();
    await subscription.closed;
  });

  it("network errors reconnect: nobody listening at first", async () => {
    const port = (standIn.server.address() as AddressInfo).port;
    await standIn.stop();
    const reconnects: ReconnectInfo[] = [];
    const subscription = createClient({ baseUrl }).subscribe(
      { reconnecting: (info) => reconnects.push(info) },
      { retryMs: 20, maxRetryMs: 50 },
    );
    await expect.poll(() => reconnects.length).toBeGreaterThanOrEqual(2);
    expect(reconnects[0]?.error).toBeInstanceOf(TypeError);
    standIn = new StandIn();
    standIn.server.listen(port, "127.0.0.1");
    await once(standIn.server, "listening");
    (await standIn.connection(0)).accept(": back\n\n");
    subscription.close();
    await subscription.closed;
  });
});
